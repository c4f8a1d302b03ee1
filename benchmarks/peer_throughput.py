"""The same throughput scenarios as sqs_throughput.py, against a peer: moto's server mode.

Starts `python -m moto.server` (in memory, nothing durable, one Python process) on a free
port and runs `sqs_throughput.measure` against it with the same clients, so its table sits
beside cqs's in docs/performance.md. Needs moto's server extra, which the test setup does
not install: `.venv/bin/pip install 'moto[server]'`.

Every message id is checked as in sqs_throughput.py (a DeliveryLedger per queue, each queue
drained after its last scenario): the table gains sent, distinct received, lost, expected,
early and after-delete duplicates; a row whose queue lost a message or delivered one
unexpectedly is marked "not a result" and the script exits 1. `--scenarios`, `--messages`
and `--drain-seconds` mean what they mean there.

    python benchmarks/peer_throughput.py --seconds 15 --clients 8 --write-docs
    python benchmarks/peer_throughput.py --seconds 5 --clients 2 --messages 200 --scenarios send
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine_summary, write_section
from sqs_throughput import (
    DOC,
    add_check_arguments,
    check_options_command,
    clean,
    client,
    measure,
    options_from,
    shout_failures,
    table,
)

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
            client(endpoint).list_queues()
            return server, endpoint
        except Exception:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError(f"moto server did not start; see {work / 'moto.log'}") from None
            time.sleep(0.3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--write-docs", action="store_true")
    add_check_arguments(parser)
    args = parser.parse_args()
    options = options_from(args, parser)
    import moto

    try:
        import moto.server  # needs moto's server extra
    except ImportError:
        sys.exit("moto's server mode is not installed: .venv/bin/pip install 'moto[server]'")

    with tempfile.TemporaryDirectory(prefix="cqs-peer-") as work:
        server, endpoint = start_moto(Path(work))
        try:
            rows = measure(endpoint, args.seconds, args.clients, options)
        finally:
            server.terminate()
            server.wait(timeout=20)
    command = " ".join([
        "python benchmarks/peer_throughput.py", f"--seconds {args.seconds:g}",
        f"--clients {args.clients}", *check_options_command(args),
    ])
    text = table(
        f"Measured {time.strftime('%Y-%m-%d')} on {machine_summary()}; moto {moto.__version__} "
        "server mode (`python -m moto.server`, one process, in memory) on the same machine, "
        "boto3 clients in the benchmark's client processes (which compete for the same "
        f"2 CPUs). Command: `{command}`.",
        rows,
    )
    print(text)
    shout_failures(rows)
    if args.write_docs:
        write_section(DOC, BEGIN, END, f"{BEGIN}\n{text}\n{END}", "Performance")
    return 0 if clean(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
