"""The benchmark harness: what the entry scripts in benchmarks/ are built from, by role.

- the servers under test: `servers` (a `cqs serve` child, alone or over an embedded Redis
  and Cassandra, or one already running; the process tree a report reads) and
  `peer_servers` (cqs beside its peers: the floor, LocalStack, ElasticMQ and moto, with
  their CPU time), `elasticmq` (ElasticMQ's install by Maven and its configuration);
- the delivery ledger: `delivery_ledger` (every send, delivery and delete, and the verdict:
  lost, duplicates before and after the visibility timeout) and `compact_ledger` (the same
  for millions of numbered messages);
- the clients and client processes: `clients` (a boto3 client, the open-file limit, what
  client processes report), `sqs_wire` (an asyncio JSON 1.0 client and its load loops),
  `blocking_sqs` (the least-cost blocking client), `paper_clients` and `duplicate_clients`
  (the spawned processes of paper_load.py and duplicate_rate.py);
- report writing: `report` (the machine, the commit, the command line, a doc's generated
  section) and `fill_report`;
- the parts of one benchmark: `fill_drain`, `fill_probes` (cache_fill.py),
  `delete_checks`, `delete_layouts` (cassandra_deletes.py), `compaction_load`,
  `compaction_probes` (compaction_strategies.py).

An entry script (`python benchmarks/<name>.py`) puts the repository root on sys.path and
imports these as `benchmarks.harness.<module>`: which servers, which load, which table.
The harness imports cqs only for its embedded launchers and, in a few layouts, its adapters;
it never imports an entry script.
"""

from __future__ import annotations

from pathlib import Path

# The repository root: where `cqs serve` children run and git reads the commit.
ROOT = Path(__file__).resolve().parents[2]
