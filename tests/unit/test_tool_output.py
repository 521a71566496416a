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
