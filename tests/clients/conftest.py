"""Fixtures of the SDK suite: the live server every SDK talks to, and its scenario plan.

The server is the suite's shared `cqs_server` (tests/fixtures/cqs_server.py, registered in
tests/conftest.py). Must not import cqs: the SDKs see the server only through HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.clients import scenario
from tests.fixtures.cqs_server import CqsProcess

MakePlan = Callable[..., dict[str, Any]]


@pytest.fixture(scope="module")
def make_plan(cqs_server: CqsProcess) -> MakePlan:
    """A fresh plan (its own queue names) against the shared server."""

    def make(**overrides: Any) -> dict[str, Any]:
        return scenario.plan(cqs_server.url, **overrides)

    return make
