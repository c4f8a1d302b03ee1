"""Suite-wide fixtures: real Redis, real Cassandra and a real cqs server, started on free ports."""

pytest_plugins = [
    "tests.fixtures.redis_server",
    "tests.fixtures.cassandra_node",
    "tests.fixtures.cqs_server",
    "tests.fixtures.cassandra_cluster",
]
