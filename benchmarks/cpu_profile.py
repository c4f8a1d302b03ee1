"""Where each microsecond of server CPU goes, per message, in peer_throughput's scenarios.

Runs the same scenarios as peer_throughput.py (same boto3 client processes, every message
id checked) against one `cqs serve` and against the floor server, and while each scenario
runs, samples the API process with py-spy (`record --format raw --threads --nonblocking`:
every thread that is running, at `--rate` Hz, without pausing the process). Each sample
is put in one part by its innermost frame that names one (the Cassandra driver, redis-py
or cqs's Redis adapter, cqs, aiohttp and its HTTP parser, the asyncio/uvloop loop), or by
its thread (the driver's reactor thread, the statement-submit threads). The shares of the
samples, times the process's CPU per message read from /proc over the same scenario, give
microseconds per message by part. For cqs, Redis and the Cassandra JVM are read from /proc
alone. The floor shows what the HTTP layer and the loop cost a server that does nothing
else.

py-spy is a third-party profiler, not installed by the project: `pip install --target DIR
py-spy` outside the venv and pass `--py-spy DIR/bin/py-spy` (or have it on PATH).

    python benchmarks/cpu_profile.py --py-spy /opt/py-spy/bin/py-spy --write-docs

Sampling has its own error (a few percent of the samples; the split of samples between
threads is py-spy's guess of which threads were running), so the parts are rounded to
5 µs and the total comes from /proc, not from the samples.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peer_throughput import PHASES, CpuMeter, ServerRun, warm_up  # noqa: E402
from sqs_throughput import DOC, add_check_arguments, measure, options_from  # noqa: E402

from benchmarks.harness import peer_servers as servers  # noqa: E402
from benchmarks.harness.report import DocSection, load_average_span, system_summary  # noqa: E402

SECTION = DocSection(DOC, "cpu_profile", "Performance")
PARTS = (
    "HTTP (aiohttp, its parser and response writing)",
    "cqs (API handlers, service, codecs)",
    "Redis client (cqs adapter + redis-py)",
    "Cassandra driver, on the event loop",
    "Cassandra driver, its own threads",
    "event loop (asyncio/uvloop callbacks, sockets)",
    "other",
)
HTTP, CQS, REDIS, DRIVER_LOOP, DRIVER_THREADS, LOOP, OTHER = PARTS

# Innermost frame first: the first marker found names the part.
FRAME_MARKERS = (
    ("cassandra/", DRIVER_LOOP),
    ("cqs/cassandra_store/", DRIVER_LOOP),
    ("redis/", REDIS),
    ("cqs/redis_cache/", REDIS),
    ("cqs/", CQS),
    ("floor_server.py", CQS),  # the floor's own handlers: what it does per request
    ("aiohttp/", HTTP),
    ("multidict", HTTP),
    ("yarl/", HTTP),
    ("asyncio/", LOOP),
    ("uvloop", LOOP),
)
# The innermost Python frame of a sample taken in the event loop's C code (py-spy without
# --native sees no deeper): the functions that run the loop.
LOOP_RUNNERS = ("run_app ", "run_forever ", "run_until_complete ", "serve ", "main ")
# Threads other than the event loop's that run the driver: its libev reactor, the
# statement-submit pool, its executor.
DRIVER_THREAD_MARKERS = ("libevreactor.py", "concurrent/futures/thread.py", "cassandra/")


def part_of(stack: list[str]) -> str:
    """`stack`: py-spy's thread frame, then the frames outermost first."""
    thread, frames = stack[0], stack[1:]
    if "MainThread" not in thread and any(
        marker in frame for frame in frames for marker in DRIVER_THREAD_MARKERS
    ):
        return DRIVER_THREADS
    if frames and frames[-1].startswith(LOOP_RUNNERS):
        return LOOP  # inside the loop's own C code (uvloop's run_forever: I/O, dispatch)
    for frame in reversed(frames):
        for marker, part in FRAME_MARKERS:
            if marker in frame:
                return part
    return OTHER


def parse_raw(path: Path) -> Counter[str]:
    """py-spy's raw (collapsed) output: `frame;frame;... count` per line."""
    samples: Counter[str] = Counter()
    if not path.exists():
        return samples
    for line in path.read_text().splitlines():
        stack_text, _, count = line.rpartition(" ")
        if not stack_text or not count.isdigit():
            continue
        samples[part_of(stack_text.split(";"))] += int(count)
    return samples


class Profiler:
    """py-spy on one process for each phase, beside the CPU meter."""

    def __init__(
        self, py_spy: str, pid: int, rate: int, work: Path, meter: CpuMeter, keep: Path | None
    ) -> None:
        self.py_spy, self.pid, self.rate, self.work, self.meter = py_spy, pid, rate, work, meter
        self.keep = keep
        self.samples: dict[str, Counter[str]] = {}

    @contextlib.contextmanager
    def around(self, phase: str) -> Iterator[None]:
        out = self.work / f"{self.pid}-{phase}.txt"
        recorder = subprocess.Popen(
            [self.py_spy, "record", "--pid", str(self.pid), "--rate", str(self.rate),
             "--format", "raw", "--threads", "--nonblocking", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)  # attached before the load starts
        try:
            with self.meter.around(phase):
                yield
        finally:
            recorder.send_signal(signal.SIGINT)
            try:
                recorder.wait(timeout=30)
            except subprocess.TimeoutExpired:
                recorder.kill()
            self.samples[phase] = parse_raw(out)
            if self.keep is not None and out.exists():
                self.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(out, self.keep / out.name)


def us(value: float) -> str:
    return f"{round(value / 5) * 5:.0f}"


def table(runs: list[tuple[ServerRun, Profiler]]) -> list[str]:
    lines = [
        "| scenario | server | CPU µs/msg in all | API process | "
        + " | ".join(PARTS) + " | Redis | Cassandra JVM | lost / early duplicates / after delete |",
        "| --- " * (7 + len(PARTS)) + "|",
    ]
    for phase, label in PHASES.items():
        for run, profiler in runs:
            cell = next((c for c in run.cells if c.phase == phase), None)
            if cell is None or not cell.messages:
                continue
            api_part = next(iter(run.target.parts))
            api_us = cell.cpu_ms(api_part) * 1000
            samples = profiler.samples.get(phase, Counter())
            total = sum(samples.values())
            shares = [samples[part] / total * api_us if total else 0.0 for part in PARTS]
            others = [cell.cpu_ms(part) * 1000 for part in cell.cpu if part != api_part]
            verdict = cell.check.verdict if cell.check else None
            checked = (
                f"{len(verdict.lost)} / {verdict.early_duplicates} / "
                f"{verdict.deliveries_after_delete}" if verdict else "not checked"
            )
            lines.append("| " + " | ".join([
                label, run.target.name, us(cell.cpu_ms() * 1000), us(api_us),
                *(us(value) for value in shares),
                *((us(value) for value in others) if others else ("—", "—")),
                checked + ("" if cell.clean else " **not a result**"),
            ]) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    parser.add_argument("--servers", default="floor,cqs")
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--warmup-messages", type=int, default=2000)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--keep", type=Path, help="copy py-spy's raw stacks into this directory")
    add_check_arguments(parser)
    parser.set_defaults(scenarios="send,batch,mixed", messages=20_000)
    args = parser.parse_args()
    if shutil.which(args.py_spy) is None and not Path(args.py_spy).exists():
        parser.error(f"py-spy not found at {args.py_spy!r}: pass --py-spy")
    options = options_from(args, parser)
    names = servers.chosen_servers(parser, args, ("floor", "cqs"))
    started = time.monotonic()
    runs: list[tuple[ServerRun, Profiler]] = []
    with tempfile.TemporaryDirectory(prefix="cqs-profile-") as work:
        for name in names:
            print(f"== {name}", flush=True)
            with servers.started(name, Path(work), servers.LOCALSTACK_PYTHON) as target:
                if args.warmup_messages > 0:
                    warm_up(target.endpoint, args.seconds, args.clients, args.warmup_messages)
                meter = CpuMeter(target)
                profiler = Profiler(args.py_spy, next(iter(target.parts.values())), args.rate,
                                    Path(work), meter, args.keep)
                rows = measure(target.endpoint, args.seconds, args.clients, options,
                               profiler.around)
            runs.append((ServerRun(target, rows, meter.phases, 0.0), profiler))
    minutes = (time.monotonic() - started) / 60
    text = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {system_summary()}; it took {minutes:.1f} "
        f"minutes; {load_average_span()}. Command: `python benchmarks/cpu_profile.py "
        f"--servers {args.servers} --rate {args.rate} --clients {args.clients} --messages "
        f"{args.messages}` (py-spy {py_spy_version(args.py_spy)}).",
        "",
        *[f"- {run.target.name}: {run.target.description}" for run, _ in runs],
        "",
        *table(runs),
        "",
        "µs of CPU per message, rounded to 5. In all, API process, Redis and Cassandra JVM: "
        "from /proc over the scenario. The API process's parts: its py-spy samples' shares "
        "(innermost frame that names a part; the driver's reactor and submit threads by "
        "thread) times its CPU. Every message id checked, as in the side-by-side table.",
    ])
    print(text)
    if args.write_docs:
        SECTION.write(text)
    return 0 if all(cell.clean for run, _ in runs for cell in run.cells) else 1


def py_spy_version(py_spy: str) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run([py_spy, "--version"], capture_output=True, text=True,
                              timeout=10).stdout.split()[-1]
    return "unknown version"


if __name__ == "__main__":
    sys.exit(main())
