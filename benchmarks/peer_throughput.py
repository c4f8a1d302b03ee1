"""The same throughput scenarios as sqs_throughput.py, against a peer: moto's server mode.

Starts `python -m moto.server` (in memory, nothing durable, one Python process) on a free
port and runs `sqs_throughput.measure` against it with the same clients, so its table sits
beside cqs's in docs/performance.md. Needs moto's server extra, which the test setup does
not install: `.venv/bin/pip install 'moto[server]'`.

    python benchmarks/peer_throughput.py --seconds 15 --clients 8 --write-docs
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine_summary, write_section
from sqs_throughput import DOC, client, measure, table

from cqs.embedded.ports import free_port

BEGIN = "<!-- peer_throughput:begin -->"
END = "<!-- peer_throughput:end -->"


def start_moto(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (work / "moto.log").open("ab")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            client(endpoint).list_queues()  # type: ignore[attr-defined]
            return server, endpoint
        except Exception:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError(f"moto server did not start; see {work / 'moto.log'}") from None
            time.sleep(0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    import moto

    try:
        import moto.server  # needs moto's server extra
    except ImportError:
        sys.exit("moto's server mode is not installed: .venv/bin/pip install 'moto[server]'")

    with tempfile.TemporaryDirectory(prefix="cqs-peer-") as work:
        server, endpoint = start_moto(Path(work))
        try:
            rows = measure(endpoint, args.seconds, args.clients)
        finally:
            server.terminate()
            server.wait(timeout=20)
    command = (
        f"python benchmarks/peer_throughput.py --seconds {args.seconds:g} --clients {args.clients}"
    )
    text = table(
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; moto {moto.__version__} "
        "server mode (`python -m moto.server`, one process, in memory) on the same machine, "
        "boto3 clients in the benchmark's client processes (which compete for the same "
        f"2 CPUs). Command: `{command}`.",
        rows,
    )
    print(text)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Performance")


if __name__ == "__main__":
    main()
