"""Reading what failed out of a tool's output (server/tool_output.py)."""

from __future__ import annotations

from server.tool_output import error_query, failure_lines, failure_query

PYTEST = """============ short test summary info ============
FAILED tests/test_store.py::test_write_during_export - sqlite3.OperationalError: database is locked
FAILED tests/test_store.py::test_checkpoint_runs_hourly
======= 2 failed, 40 passed in 3.1s ======="""


def test_the_escaping_exception_comes_first() -> None:
    text = "Traceback (most recent call last):\n  File \"/a/b/c.py\", line 3\nKeyError: 'x'\n\nDuring handling...\n" \
           "Traceback (most recent call last):\nValueError: bad reading -3\n"
    assert failure_lines(text)[:2] == ["ValueError: bad reading -3", "KeyError: 'x'"]


def test_failing_tests_and_error_lines() -> None:
    assert failure_lines(PYTEST) == ["test_write_during_export sqlite3.OperationalError: database is locked",
                                     "test_checkpoint_runs_hourly"]
    assert failure_lines("npm ERR! code ERESOLVE\nerror: could not find `esbuild`") == [
        "code ERESOLVE", "could not find `esbuild`"]
    assert failure_lines("--- FAIL: TestParse (0.00s)") == ["TestParse"]


def test_query_from_a_response_mapping_paths_and_numbers_dropped() -> None:
    query = failure_query({"stdout": "", "stderr": "E   sqlite3.OperationalError: database is locked at "
                                                   "/home/me/x/y.py:1234", "exit_code": 1})
    assert query == "OperationalError: database is locked at :"


def test_no_failure_no_query() -> None:
    assert failure_query({"stdout": "ok", "stderr": "", "exit_code": 0}) is None
    assert failure_query("all good") is None
    assert failure_query(None) is None
    assert failure_query("ValueError: in a file being read", tool="Read") is None
    assert failure_query({"stdout": "line one\nsegmentation fault", "exit_code": 139}) == "line one segmentation fault"


def test_a_failed_calls_error_as_claude_code_sends_it() -> None:
    assert error_query("Exit code 1\nsqlite3.OperationalError: database is locked", "Bash") == (
        "OperationalError: database is locked")
    assert error_query("Exit code 2\n" + PYTEST, "Bash") == (
        "test_write_during_export sqlite3.OperationalError: database is locked test_checkpoint_runs_hourly")
    assert error_query("Exit code 1\nmake: *** [all] oops\nstopped", "Bash") == "make: *** [all] oops stopped"
    assert error_query("File does not exist.", "Read") == "File does not exist."  # a content tool that failed
    for nothing in ("Exit code 1", "", "   ", None, 42, ["Exit code 1"]):
        assert error_query(nothing, "Bash") is None, nothing


def test_the_message_behind_a_log_prefix_a_program_code_or_a_cross() -> None:
    """A build step's prefix (BuildKit's `#7 2.931`, a bracketed time), a program's `name: (60) message` (curl),
    a `FATAL ERROR:` and a `×` line with a sentence after it (pip) are failure lines, whole."""
    assert failure_lines("#7 2.931 ERROR: Could not install packages: [Errno 28] No space left on device\n"
                         "ERROR: failed to solve: exit code: 1") == [
        "Could not install packages: [Errno 28] No space left on device", "failed to solve: exit code: 1"]
    assert failure_lines("[12:04:31] error: port taken") == ["port taken"]
    assert failure_lines("curl: (60) SSL certificate problem: certificate has expired\nMore details here") == [
        "curl: SSL certificate problem: certificate has expired"]
    assert failure_lines("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory") == [
        "Reached heap limit Allocation failed - JavaScript heap out of memory"]
    assert failure_lines("× This environment is externally managed\n╰─> To install") == [
        "This environment is externally managed"]
    assert failure_lines("✗ parses a date") == ["parses a date"]
    assert failure_lines("FAIL src/x.test.ts") == ["src/x.test.ts"]
