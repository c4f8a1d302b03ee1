"""The long fuzz run: the CI fuzz test's generator, for many more requests.

Starts an embedded Redis, an embedded Cassandra and one `cqs serve` with the test-only clock
(or uses `--endpoint`), sets the fuzz stage up (`tests/wire/fuzz_scene.py`: playground
queues, tracked queues of known messages, real receipt handles), then sends hostile
requests from `tests/wire/fuzz_http.hostile_requests` (Hypothesis, generate phase only, one
seed per chunk of `--chunk` examples, from `--seed` on) until `--requests` are sent or
`--minutes` pass. It prints the requests sent, the answers by status class and error code,
the 5xx count and every answer that was not a well-formed SQS answer, the server's resident
memory before and after, requests per second, whether a clean send/receive/delete still
works over both protocols, and the lost-message check: the clock is moved past the longest
visibility timeout a fuzzed receive may set and the tracked queues are drained (with
`--endpoint`, a server without the test clock, the tracked counts are compared instead).
The server log is scanned for tracebacks.

    python benchmarks/fuzz.py --requests 50000
    python benchmarks/fuzz.py --minutes 10 --seed 7

Imports the embedded launchers (through `benchmarks.harness.servers`) and the test suite's fuzz modules;
never the service or the adapters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

from benchmarks.harness.report import machine_summary  # noqa: E402
from benchmarks.harness.servers import start_server  # noqa: E402
from cqs.embedded.cassandra import EmbeddedCassandra  # noqa: E402
from cqs.embedded.redis_server import EmbeddedRedis  # noqa: E402
from tests.wire.fuzz_http import HostileRequest, RawHttp, hostile_requests  # noqa: E402
from tests.wire.fuzz_scene import (  # noqa: E402
    LONGEST_VISIBILITY_SECONDS,
    FuzzScene,
    Tally,
    build_scene,
    clean_round_trip,
    client,
    drain,
    log_alarms,
)

ACCOUNT_ID = "000000000000"


@dataclass
class Server:
    endpoint: str
    pid: int | None
    log: Path | None
    test_clock: bool


@contextmanager
def embedded_server(work: Path) -> Iterator[Server]:
    redis, cassandra = EmbeddedRedis(work / "redis"), EmbeddedCassandra(work / "cassandra")
    process = None
    try:
        redis.start()
        cassandra.start()
        process, endpoint, log = start_server(
            redis.url, cassandra.contact_point, "fuzz_" + uuid.uuid4().hex[:10], work,
            ["--log-level", "WARNING", "--receipt-secret", "fuzz-run-receipt-secret",
             "--test-clock", "true"],
            environment={"CQS_ALLOW_TEST_CLOCK": "1"},
        )
        yield Server(endpoint, process.pid, log, test_clock=True)
    finally:
        if process is not None and process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
        redis.stop()
        cassandra.stop()


def resident_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def advance_clock(endpoint: str, seconds: float) -> None:
    request = urllib.request.Request(
        endpoint + "/_cqs/test/clock", data=json.dumps({"advance_seconds": seconds}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def fuzz(scene: FuzzScene, endpoint: str, args: argparse.Namespace, tally: Tally) -> float:
    """Send until the count or the time is reached; the seconds it took."""
    address = urlsplit(endpoint)
    http = RawHttp(address.hostname or "127.0.0.1", address.port or 80)
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes else float("inf")
    strategy = hostile_requests(scene.targets)
    chunk = 0

    class Enough(Exception):
        pass

    while tally.sent < args.requests and time.monotonic() < deadline:
        @hypothesis_seed(args.seed + chunk)
        @settings(max_examples=args.chunk, database=None, deadline=None,
                  phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
        @given(strategy)
        def send(request: HostileRequest) -> None:
            if tally.sent >= args.requests or time.monotonic() >= deadline:
                raise Enough
            tally.record(request, http.exchange(request))

        try:
            send()
        except Enough:
            break
        chunk += 1
        print(f"  {tally.sent} requests, {tally.server_errors} 5xx, {len(tally.problems)} "
              f"problems, {time.monotonic() - started:.0f} s", flush=True)
    http.close()
    return time.monotonic() - started


def lost_messages(server: Server, scene: FuzzScene) -> dict[str, int]:
    sqs = client(server.endpoint)
    if server.test_clock:
        advance_clock(server.endpoint, LONGEST_VISIBILITY_SECONDS + 120)
        return {url.rsplit("/", 1)[-1]: len(drain(sqs, url, ids, seconds=180))
                for url, ids in scene.tracked.items()}
    counts = {}
    for url, ids in scene.tracked.items():
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        held = int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"])
        counts[url.rsplit("/", 1)[-1]] = max(0, len(ids) - held)
    return counts


def run(server: Server, args: argparse.Namespace) -> int:
    scene = build_scene(client(server.endpoint), server.endpoint, ACCOUNT_ID)
    log_start = server.log.stat().st_size if server.log else 0
    rss_before = resident_mib(server.pid)
    tally = Tally()
    seconds = fuzz(scene, server.endpoint, args, tally)
    time.sleep(2)
    rss_after = resident_mib(server.pid)
    clean = []
    for protocol in ("json", "query"):
        try:
            clean_round_trip(client(server.endpoint, protocol))
            clean.append(f"{protocol} ok")
        except Exception as exc:  # reported, not raised: the figures still print
            clean.append(f"{protocol} FAILED: {exc}")
    lost = lost_messages(server, scene)
    alarms = log_alarms(server.log.read_bytes()[log_start:].decode("utf-8", "replace")
                        ) if server.log else []

    print(f"\nmachine: {machine_summary()}")
    print(f"seed {args.seed} (+1 per chunk of {args.chunk} examples)")
    print(f"requests sent: {tally.sent} in {seconds:.0f} s ({tally.sent / seconds:.0f}/s)")
    print(f"5xx answers: {tally.server_errors}; answers that were not good: "
          f"{len(tally.problems)}")
    print("answers by status class and error code:")
    for outcome, count in tally.outcomes.most_common():
        print(f"  {count:8d}  {outcome}")
    if rss_before is not None and rss_after is not None:
        print(f"server RSS: {rss_before:.0f} MiB before, {rss_after:.0f} MiB after")
    print(f"clean send/receive/delete afterwards: {', '.join(clean)}")
    tracked = sum(len(ids) for ids in scene.tracked.values())
    print(f"tracked messages: {tracked}; lost: {lost}")
    print(f"log lines with a traceback or unexpected error: {len(alarms)}")
    for line in tally.problems[:20]:
        print("  " + line[:1500])
    for alarm, count in Counter(alarms).most_common(20):
        print(f"  {count:6d}x {alarm[:500]}")
    failed = tally.server_errors or tally.problems or alarms or any(lost.values()) or any(
        "FAILED" in outcome for outcome in clean)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--minutes", type=float, default=0.0, help="stop earlier after this")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=2_000, help="examples per seed")
    parser.add_argument("--endpoint", help="a running server instead of an embedded one")
    parser.add_argument("--server-pid", type=int, help="with --endpoint: whose memory to read")
    args = parser.parse_args()
    if args.endpoint:
        set_hypothesis_home_dir(tempfile.mkdtemp(prefix="cqs-fuzz-hypothesis-"))
        return run(Server(args.endpoint, args.server_pid, None, test_clock=False), args)
    with tempfile.TemporaryDirectory(prefix="cqs-fuzz-") as work, embedded_server(
            Path(work)) as server:
        set_hypothesis_home_dir(str(Path(work) / "hypothesis"))  # not in the repository
        return run(server, args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
