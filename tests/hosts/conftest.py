"""Fixtures of the multi-host fault tests: one deployment over network namespaces per module.

`deployment` (module scope): three API hosts, each a network namespace of its own with a
veth link to a services namespace holding Redis and a one-node Cassandra of the version
under test; h1 runs two `cqs serve` processes that take only sends, h2 two that take only
receives, h3 one that takes both (tests/hosts/scenarios.py `ROLES`). Every process is
stopped and every namespace removed when the module ends, whatever happened. A machine
where this process cannot make namespaces (not root, no veth) fails the tests, never skips
them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hosts.deployment import Deployment, deployed
from tests.hosts.network import check_available

LAYOUT = {"h1": 2, "h2": 2, "h3": 1}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    why_not = check_available()
    if why_not:
        pytest.fail(f"the multi-host tests need network namespaces and veth pairs: {why_not}")
    with deployed(tmp_path_factory.mktemp("hosts"), LAYOUT) as running:
        yield running
