"""Suite-wide fixtures: real Redis, real Cassandra and a real cqs server, started on free ports.

Also how the suite splits over pytest-xdist workers (`./scripts/test` runs two): by test
module, so each module's fixtures start once, except the folders whose fixtures are shared
by all their modules (a Spark cluster, the console's servers), which go to one worker whole.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest_plugins = [
    "tests.fixtures.untimed",
    "tests.fixtures.redis_server",
    "tests.fixtures.cassandra_node",
    "tests.fixtures.cqs_server",
    "tests.fixtures.cassandra_cluster",
    "tests.fixtures.redis_cluster",
]

# Folders whose session- or package-scoped servers every module of theirs uses (the
# cluster drills share one 3-node Cassandra ring; the Redis Cluster scenarios one cluster).
WHOLE_FOLDERS = ("tests/spark/", "tests/admin/", "tests/cluster/", "tests/wire/on_redis_cluster/")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            for folder in WHOLE_FOLDERS:
                if nodeid.startswith(folder):
                    return folder
            return nodeid.split("::", 1)[0]

    return ModuleScheduling(config, log)
