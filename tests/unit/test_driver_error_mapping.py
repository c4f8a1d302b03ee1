"""How driver failures map to cqs errors at the Cassandra session's edge: an outcome the
store cannot settle now is `StorageUnavailable` (a retryable 503, or a claim not taken),
and a CQL error is a bug that propagates unchanged."""

from __future__ import annotations

import cassandra.protocol
import pytest

from cqs.cassandra_store.session import unavailable_on_driver_errors
from cqs.domain.errors import StorageUnavailable


def _server_error(code: int, message: str) -> cassandra.protocol.ErrorMessage:
    """What the driver raises for an error frame: the registered class for the code, or a
    bare ErrorMessage for a code it does not know (0x1700 on driver 3.x)."""
    error_class = cassandra.protocol.error_classes.get(code, cassandra.protocol.ErrorMessage)
    return error_class(code=code, message=message, info=None)


def test_cas_write_unknown_is_unavailable() -> None:
    # Seen in the cluster soak: a delivery claim's lightweight transaction, right after a
    # Redis kill, answered this and the receive became a 500.
    with pytest.raises(StorageUnavailable, match="CAS operation result is unknown"):
        with unavailable_on_driver_errors("request"):
            raise _server_error(
                0x1700, "CAS operation result is unknown - proposal accepted by 1 but not a quorum."
            )


@pytest.mark.parametrize("code", [0x1000, 0x1001, 0x1100, 0x1200, 0x1500])
def test_unavailable_and_timeouts_are_unavailable(code: int) -> None:
    with pytest.raises(StorageUnavailable):
        with unavailable_on_driver_errors("request"):
            raise _server_error(code, "not now")


@pytest.mark.parametrize("code", [0x2000, 0x2200, 0x2400])
def test_cql_errors_propagate(code: int) -> None:
    error = _server_error(code, "a bad statement")
    with pytest.raises(cassandra.protocol.ErrorMessage) as raised:
        with unavailable_on_driver_errors("request"):
            raise error
    assert raised.value is error
