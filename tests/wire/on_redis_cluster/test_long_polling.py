"""The long polling scenarios of tests/wire/test_long_polling.py, on a Redis Cluster (see conftest)."""

from tests.wire.test_long_polling import *  # noqa: F403
