"""Time to ready and resident memory of the embedded Cassandra: one node, or a 3-node ring.

    .venv/bin/python benchmarks/embedded_cassandra_start.py [--cluster] [--runs 3]

Ready means CQL answers (a query of system.local); a ring is ready
when every node has seen the others up. RSS is read 10 s after ready. The numbers of the
README's "Embedded Cassandra" paragraph come from here.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.cassandra5_install import cassandra_version
from cqs.embedded.cassandra_cluster import EmbeddedCassandraCluster, resident_bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", action="store_true", help="three nodes on 127.0.0.2-4")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--heap", default=None)
    args = parser.parse_args()
    version = cassandra_version()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="cqs-start-") as work:
            if args.cluster:
                cluster = EmbeddedCassandraCluster(Path(work))
                try:
                    seconds = cluster.start(timeout=240)
                    time.sleep(10)
                    rss = [size / 2**20 for size in cluster.resident_bytes()]
                finally:
                    cluster.stop()
                print(f"run {run + 1}: {version} 3-node ring formed in {seconds:.1f} s;"
                      f" RSS {', '.join(f'{m:.0f}' for m in rss)} MiB")
            else:
                node = (EmbeddedCassandra(Path(work), heap=args.heap) if args.heap
                        else EmbeddedCassandra(Path(work)))
                began = time.monotonic()
                try:
                    node.start()
                    seconds = time.monotonic() - began
                    time.sleep(10)
                    rss = resident_bytes(node.pid or 0) / 2**20
                finally:
                    node.stop()
                print(f"run {run + 1}: {version} node ready in {seconds:.1f} s;"
                      f" RSS {rss:.0f} MiB (heap {node.heap})")


if __name__ == "__main__":
    main()
