"""Partial faults over a multi-host deployment: nothing acknowledged may be lost (issue 26).

Builds the deployment of tests/hosts/ (three API hosts, each a network namespace with a
veth link to a services namespace holding Redis and Cassandra; h1's servers take sends, h2's
receives, h3's both; needs root) and runs, on a fresh queue each:

- the named scenarios of the CI test, longer: `cut` (h1 cut off from Redis), `stall`
  (Redis SIGSTOP), `slow` (h1's link to Cassandra squeezed), `redis-restart` (Redis
  SIGKILL, restarted empty), `cassandra-stall` (Cassandra SIGSTOP), `api-crash` (an API
  process of h2, then of h1, SIGKILL and restarted), `api-stall` (h3's process
  SIGSTOP), `cut-cassandra` (h3 cut off from Cassandra), `fifo` (a FIFO queue through cut,
  stall and slow link in turn, then a deduplication id resent after PurgeQueue);
- `random`: `--seconds` of sends with a seeded random fault schedule, one fault every
  `--every` seconds (a host cut off from Redis or from Cassandra, a slowed link, a Redis
  stall, Redis restarted empty, a Cassandra stall, an API process killed and restarted;
  host and length drawn too), on a standard queue, and with `--fifo` on a FIFO one.

Each row of the report gives each fault's availability (the share of calls that ended
during it answered) and counts, by message id, sent (acknowledged), received, lost, early
duplicates (delivered again before the visibility timeout, with the servers' redelivery
counters by reason as their cause), deliveries after delete, deliveries before their
DelaySeconds (every third chunk on a standard queue), FIFO order violations, failed
calls, and how long after the end of the sends and faults the last message arrived.
Exits non-zero if anything acknowledged was lost. `--write-docs` puts the table, with the
machine and the command, between the host-faults markers of docs/reliability.md.

    python benchmarks/host_faults.py --seconds 3600 --messages 1000000 --named-seconds 40 \
        --seed 7 --write-docs

Imports the hosts' harness from tests/hosts/ and the shared report helpers; never the
service.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness.report import DocSection, command_line, git_commit, host_lines  # noqa: E402
from cqs.embedded.cassandra5_install import cassandra_version  # noqa: E402
from tests.hosts.deployment import deployed  # noqa: E402
from tests.hosts.network import check_available  # noqa: E402
from tests.hosts.scenarios import (  # noqa: E402
    Load,
    Outcome,
    purge_and_resend,
    random_schedule,
    run_scenario,
    standard_faults,
)

SECTION = DocSection(ROOT / "docs" / "reliability.md", "host-faults", "Reliability")
NAMED = ("cut", "stall", "slow", "redis-restart", "cassandra-stall", "api-crash", "api-stall",
         "cut-cassandra", "fifo")


def row(outcome: Outcome) -> str:
    v = outcome.verdict
    causes = ", ".join(f"{reason} {n}" for reason, n in sorted(outcome.causes.items())) or "none"
    drained = "never" if outcome.recovered_seconds is None else f"{outcome.recovered_seconds:.1f}"
    return (
        f"| {outcome.scenario}{' (FIFO)' if outcome.fifo else ''} | {'; '.join(outcome.faults)} "
        f"| {v.sent} | {v.received} | **{len(v.lost)}** | {v.early_duplicates} | {causes} "
        f"| {v.deliveries_after_delete} | {'-' if outcome.fifo else v.delivered_before_delay} "
        f"| {outcome.order_violations if outcome.fifo else '-'} "
        f"| {sum(outcome.errors.values())} of {outcome.calls_ok + sum(outcome.errors.values())} "
        f"| {drained} |"
    )


def report(outcomes: list[Outcome], args: argparse.Namespace, seconds: float,
           purge: str) -> str:
    layout = ", ".join(f"{h}: {n}" for h, n in zip(("h1", "h2", "h3"), args.layout, strict=True))
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} at commit {git_commit()}: API processes per "
        f"host {layout} (h1 sends, h2 receives, h3 both), a Redis and "
        f"{args.cassandra_nodes} embedded Cassandra {cassandra_version()} node(s) "
        f"in a services namespace, each host linked to it by a veth pair; {args.polls} "
        f"long polls (WaitTimeSeconds 5, VisibilityTimeout 60 s) over the receiving servers; "
        f"clients speak AWS JSON 1.0 from inside their host's namespace. {seconds:.0f} s in "
        f"all. Command: `{command_line('host_faults.py')}`.",
        "",
        *host_lines(),
        "",
        "| scenario | faults (s into the sends; share of calls answered during each) | sent | received | **lost** | early duplicates "
        "| server redeliveries by reason | after delete | before their delay | order violations "
        "| failed calls | all received s after the end |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *(row(o) for o in outcomes),
        "",
        f"FIFO resend after PurgeQueue: {purge}.",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", default=",".join([*NAMED, "random"]),
                        help=f"comma-separated, of {', '.join(NAMED)}, random")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="sends of the random run")
    parser.add_argument("--named-seconds", type=float, default=None,
                        help="sends of each named run (default: a quarter of --seconds, at "
                        "least 15)")
    parser.add_argument("--messages", type=int, default=20000, help="of the random run")
    parser.add_argument("--named-messages", type=int, default=3000)
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--every", type=float, default=30.0, help="a fault this often")
    parser.add_argument("--fifo", action="store_true", help="run the random schedule on FIFO too")
    parser.add_argument("--cassandra-nodes", type=int, choices=(1, 3), default=1)
    parser.add_argument("--layout", type=lambda s: [int(n) for n in s.split(",")],
                        default=[2, 2, 1], help="API processes on h1,h2,h3")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    why_not = check_available()
    if why_not:
        print(f"host_faults needs network namespaces and veth pairs: {why_not}")
        return 2
    began = time.monotonic()
    outcomes: list[Outcome] = []
    purge = "not run"
    named_seconds = args.named_seconds or max(15.0, args.seconds / 4)
    named = Load(args.named_messages, named_seconds, args.polls, drain_seconds=120.0)
    with tempfile.TemporaryDirectory(prefix="host-faults-") as work, deployed(
        Path(work), dict(zip(("h1", "h2", "h3"), args.layout, strict=True)),
        args.cassandra_nodes,
    ) as deployment:
        for scenario in args.scenarios.split(","):
            if scenario == "random":
                load = Load(args.messages, args.seconds, args.polls, drain_seconds=180.0)
                schedule = random_schedule(args.seed, args.seconds, args.every)
                kinds = [False, True] if args.fifo else [False]
                for fifo in kinds:
                    outcomes.append(run_scenario(deployment, f"random seed {args.seed}", load,
                                                 schedule, fifo=fifo))
                    print(outcomes[-1].summary(), flush=True)
                continue
            fifo = scenario == "fifo"
            faults = standard_faults("all" if fifo else scenario, at=named_seconds / 5,
                                     lasts=named_seconds / 4)
            outcomes.append(run_scenario(deployment, scenario, named, faults, fifo=fifo))
            print(outcomes[-1].summary(), flush=True)
            if fifo:
                first, second, received = purge_and_resend(deployment)
                purge = ("delivered (a new message id)" if received == [second] != [first]
                         else f"FAILED: first {first}, second {second}, received {received}")
    text = report(outcomes, args, time.monotonic() - began, purge)
    print(text)
    if args.write_docs:
        SECTION.write(text)
    return 1 if any(o.verdict.lost for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
