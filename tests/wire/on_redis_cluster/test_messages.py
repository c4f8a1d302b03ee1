"""The standard queue messages scenarios of tests/wire/test_messages.py, on a Redis Cluster (see conftest)."""

from tests.wire.test_messages import *  # noqa: F403
