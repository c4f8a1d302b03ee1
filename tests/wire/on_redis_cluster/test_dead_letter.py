"""The dead-letter queues scenarios of tests/wire/test_dead_letter.py, on a Redis Cluster (see conftest)."""

from tests.wire.test_dead_letter import *  # noqa: F403
