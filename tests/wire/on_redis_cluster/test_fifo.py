"""The FIFO queues scenarios of tests/wire/test_fifo.py, on a Redis Cluster (see conftest)."""

from tests.wire.test_fifo import *  # noqa: F403
