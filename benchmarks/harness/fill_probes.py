"""The probes of benchmarks/cache_fill.py: boto3 threads that time SQS calls while a big
queue's cache fills, and their latency rows.

Owns `Samples` (latencies and errors per operation), `Probe` (send / receive / delete on a
small queue, recording into the current phase) and `BigQueueProbe` (a ReceiveMessage of up
to 10 on the filling queue every second, each delivery recorded in the run's ledger and
kept in flight). Imports boto3 through benchmarks/harness/clients.py and the ledger of
benchmarks/harness/fill_drain.py; never cqs itself.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.clients import sqs_client
from benchmarks.harness.fill_drain import Checked

VISIBILITY_SECONDS = 600  # of every receive on the big queue, during the fill and after



@dataclass
class Samples:
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def timed(self, operation: str, call: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            result = call(**kwargs)
        except Exception as exc:  # every failure is an error of the probe, the loop goes on
            self.errors.setdefault(operation, []).append(f"{type(exc).__name__}: {exc}")
            return None
        self.latencies_ms.setdefault(operation, []).append((time.perf_counter() - began) * 1000)
        return result


class Probe(threading.Thread):
    """send / receive / delete on a small queue, recording into the current phase."""

    def __init__(self, endpoint: str, url: str) -> None:
        super().__init__(daemon=True)
        self._sqs = sqs_client(endpoint)
        self._url = url
        self.phases: dict[str, Samples] = {}
        self.phase = "baseline"
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            samples = self.phases.setdefault(self.phase, Samples())
            samples.timed("SendMessage", self._sqs.send_message, QueueUrl=self._url,
                          MessageBody="probe")
            got = samples.timed("ReceiveMessage", self._sqs.receive_message, QueueUrl=self._url,
                                MaxNumberOfMessages=1, WaitTimeSeconds=0)
            for message in (got or {}).get("Messages", []):
                samples.timed("DeleteMessage", self._sqs.delete_message, QueueUrl=self._url,
                              ReceiptHandle=message["ReceiptHandle"])


class BigQueueProbe(threading.Thread):
    """A ReceiveMessage of up to 10 on the filling queue every second, each delivery
    recorded in the ledger and kept in flight (deleted after the drain)."""

    def __init__(self, endpoint: str, url: str, checked: Checked) -> None:
        super().__init__(daemon=True)
        self._sqs = sqs_client(endpoint)
        self._url = url
        self._checked = checked
        self.samples = Samples()
        self.held: list[tuple[int, str]] = []  # (number, receipt handle)
        self.stopping = threading.Event()

    def receive(self, sqs: Any, count: int) -> None:
        requested = time.time()
        got = self.samples.timed("ReceiveMessage (big queue)", sqs.receive_message,
                                 QueueUrl=self._url, MaxNumberOfMessages=count,
                                 VisibilityTimeout=VISIBILITY_SECONDS)
        answered = time.time()
        for message in (got or {}).get("Messages", []):
            n = self._checked.record_delivery(message, requested, answered)
            self.held.append((n, message["ReceiptHandle"]))

    def run(self) -> None:
        while not self.stopping.wait(1.0):
            self.receive(self._sqs, 10)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def latency_rows(phase: str, samples: Samples) -> list[str]:
    lines = []
    for operation in sorted(set(samples.latencies_ms) | set(samples.errors)):
        values = samples.latencies_ms.get(operation, [])
        errors = len(samples.errors.get(operation, []))
        median = statistics.median(values) if values else 0.0
        lines.append(
            f"| {phase} | {operation} | {len(values) + errors} | {median:.1f} | "
            f"{percentile(values, 0.95):.1f} | {percentile(values, 0.99):.1f} | "
            f"{max(values, default=0.0):.1f} | {errors} |"
        )
    return lines
