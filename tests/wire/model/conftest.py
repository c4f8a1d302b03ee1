"""The scene of the model-driven tests: queues made once on the shared server."""

from __future__ import annotations

import pytest

from tests.fixtures.cqs_server import CqsProcess
from tests.wire.model.wire import Scene


@pytest.fixture(scope="session")
def scene(cqs_server: CqsProcess) -> Scene:
    return Scene(cqs_server.url)
