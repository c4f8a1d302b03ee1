"""The consumer groups scenarios of tests/wire/test_consumer_groups.py, on a Redis Cluster (see conftest)."""

from tests.wire.test_consumer_groups import *  # noqa: F403
