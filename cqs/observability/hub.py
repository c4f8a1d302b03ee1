"""ObservabilityHub: everything one API process needs to be watched, built in one place.

Owns the lifetimes of the metrics, the telemetry the service and adapters report to, the
scrape rendering, and (once storage is connected) the per-queue statistics, the readiness
probe and the service the statistics view asks about a queue. The composition root builds
one hub per app and attaches the storage-backed parts on startup. Imports the other
observability modules and the service (for its type); never an adapter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, disable_created_metrics

from cqs.observability.exposition import MetricsExposition
from cqs.observability.health import ReadinessProbe
from cqs.observability.metrics import CqsMetrics
from cqs.observability.stats import QueueStatistics
from cqs.observability.telemetry import PrometheusTelemetry
from cqs.service import QueueService


@dataclass(frozen=True, slots=True)
class Attached:
    """The parts that need connected storage."""

    statistics: QueueStatistics
    readiness: ReadinessProbe
    service: QueueService


class ObservabilityHub:
    def __init__(self, *, version: str, multiprocess_dir: Path | None) -> None:
        # `_created` series would double the series count of every counter.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        registry = None if multiprocess_dir is not None else CollectorRegistry()
        self.version = version
        self.started_at = time.time()
        self.metrics = CqsMetrics(registry)
        self.telemetry = PrometheusTelemetry(self.metrics)
        self.exposition = MetricsExposition(registry, multiprocess_dir, version=version)
        self.attached: Attached | None = None

    def attach(
        self, *, statistics: QueueStatistics, readiness: ReadinessProbe, service: QueueService
    ) -> None:
        self.attached = Attached(statistics, readiness, service)

    def detach(self) -> None:
        self.attached = None
