"""compose.yaml's "cluster" profile, validated as a file (no container engine here): cqs's
cache URLs name seed nodes of a six-node Redis Cluster that the profile starts and joins."""

from __future__ import annotations

from pathlib import Path

import yaml

from cqs.redis_cache.topology import TopologyKind, parse_topology

COMPOSE = Path(__file__).resolve().parents[2] / "compose.yaml"


def test_the_cluster_profile_runs_cqs_on_six_cluster_nodes_it_joins_first() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    profile = {name for name, service in services.items()
               if "cluster" in service.get("profiles", [])}  # fmt: skip
    nodes = {name for name in profile if name.startswith("redis-node-")}
    assert len(nodes) == 6
    for name in nodes:
        command = services[name]["command"]
        assert command[command.index("--cluster-enabled") + 1] == "yes"
        assert command[command.index("--save") + 1] == ""  # no persistence, as for one server
    create = services["redis-cluster-create"]
    assert "--cluster-replicas 1" in create["command"][-1]
    assert set(create["depends_on"]) == nodes

    cqs = services["cqs-cluster"]
    topology = parse_topology(cqs["environment"]["CQS_REDIS_URLS"].split(","))
    assert topology.kind is TopologyKind.CLUSTER
    assert {host for host, _port in topology.nodes} <= nodes
    assert cqs["depends_on"]["redis-cluster-create"]["condition"] == (
        "service_completed_successfully"
    )
    assert not profile & {"cqs", "redis"}  # the default services stay as they were
