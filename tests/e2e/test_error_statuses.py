"""Every error the library raises keeps the HTTP status, name and shape it had when each class carried its own status
(before the errors were grouped into families and the statuses moved to server/errors.py's one table)."""

from __future__ import annotations

import inspect

import pytest
from harness import assert_error_shape
from litestar import Litestar, get
from litestar.params import FromPath
from litestar.testing import TestClient

import vault_cortex.errors as errors
from server.errors import handle_exception

# Each class's `status` attribute as it was in vault_cortex/errors.py, copied here by hand.
BEFORE = {
    "ConfigError": 500, "VaultExists": 409, "VaultNotFound": 404, "VaultReadOnly": 403, "ModelUnavailable": 503,
    "IndexUnavailable": 503, "IndexCorrupt": 503, "SyncCancelled": 503, "NoteNotFound": 404, "NoteParseError": 422,
    "UnsafePath": 400, "WriteConflict": 409, "DiskFull": 507, "InvalidRequest": 400,
}
SHOWN_AS = {"IndexCorrupt": "IndexUnavailable"}  # a damaged index is answered as one being rebuilt (index_trouble)
FAMILIES = {errors.RequestRefused, errors.NotFound, errors.Conflict, errors.TryLater, errors.Broken}


def _raised() -> list[type[errors.VaultCortexError]]:
    """Every error class the library raises: all but the root and the families."""
    return [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
            if issubclass(cls, errors.VaultCortexError) and cls is not errors.VaultCortexError and cls not in FAMILIES]


@get("/raise/{name:str}", sync_to_thread=False)
def _raise(name: FromPath[str]) -> None:
    raise getattr(errors, name)(f"{name} raised on purpose")


def test_every_error_class_is_in_one_family_and_was_there_before() -> None:
    raised = _raised()
    assert {cls.__name__ for cls in raised} == set(BEFORE), "a new error class needs its status decided here"
    for cls in raised:
        assert sum(issubclass(cls, family) for family in FAMILIES) == 1, cls
        assert not hasattr(cls, "status"), f"{cls.__name__}: the library carries no HTTP status"


@pytest.mark.parametrize(("name", "status"), sorted(BEFORE.items()))
def test_each_error_keeps_its_status_and_shape_over_http(name: str, status: int) -> None:
    with TestClient(Litestar([_raise], exception_handlers={Exception: handle_exception})) as client:
        response = client.get(f"/raise/{name}")
    assert_error_shape(response)
    assert response.status_code == status
    body = response.json()
    assert (body["error"], body["status"]) == (SHOWN_AS.get(name, name), status)
    assert body["detail"] == f"{name} raised on purpose" or name in SHOWN_AS
