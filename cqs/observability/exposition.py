"""The `/metrics` answer, for one process or for every worker of `cqs serve --workers N`.

Owns: which collectors a scrape reads (this process's registry with the standard process,
platform and GC collectors; or, in prometheus-client multiprocess mode, every worker's
value files plus each live worker's process figures), the gauges computed at scrape time
(per-queue figures, hit ratio, worker count, build info), and the multiprocess directory's
life (`PROMETHEUS_MULTIPROC_DIR`: made fresh by the supervisor, dead workers marked).
prometheus-client reads that variable itself when imported; `multiprocess_directory` is
the one place cqs reads it. Imports prometheus-client, `metrics` and `stats`; never the
service, aiohttp or an adapter.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from cqs.domain.model import CacheState
from cqs.observability.metrics import info
from cqs.observability.stats import COUNTER_FIELDS, QueueSnapshot

MULTIPROCESS_ENVIRONMENT_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_WORKER_FILE = re.compile(r"^gauge_livesum_(\d+)\.db$")


def multiprocess_directory() -> Path | None:
    """The directory shared by the worker processes, when this process is one of them."""
    value = os.environ.get(MULTIPROCESS_ENVIRONMENT_VARIABLE, "")
    return Path(value) if value else None


def fresh_multiprocess_directory(data_dir: Path) -> Path:
    """An empty directory for the workers' metric files (left-overs of an earlier run would
    add their counts to this one's)."""
    directory = Path(data_dir).resolve() / "metrics"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def mark_worker_dead(pid: int, directory: Path) -> None:
    """Drop a dead worker's live gauges (its counters keep counting in the totals)."""
    mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]


def live_worker_pids(directory: Path) -> list[int]:
    """Workers that wrote metrics, were not marked dead, and still run."""
    pids: list[int] = []
    for path in directory.iterdir():
        found = _WORKER_FILE.match(path.name)
        if found and Path(f"/proc/{found.group(1)}").exists():
            pids.append(int(found.group(1)))
    return sorted(pids)


class _Families(Collector):
    """Hands already-collected families to `generate_latest`."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def _with_pid(families: Iterable[Metric], pid: int) -> Iterator[Metric]:
    for family in families:
        labelled = Metric(family.name, family.documentation, family.type, family.unit)
        labelled.samples = [
            sample._replace(labels={**sample.labels, "pid": str(pid)}) for sample in family.samples
        ]
        yield labelled


class MetricsExposition:
    """Renders a scrape. `registry` holds this process's metrics in single-process mode;
    with `multiprocess_dir` every worker's files are read instead."""

    def __init__(
        self,
        registry: CollectorRegistry | None,
        multiprocess_dir: Path | None,
        *,
        version: str,
    ) -> None:
        self._multiprocess_dir = multiprocess_dir
        self._version = version
        self._collectors: list[Collector] = []
        if multiprocess_dir is not None:
            self._collectors.append(
                MultiProcessCollector(None, str(multiprocess_dir))  # type: ignore[no-untyped-call]
            )
            self._collectors.append(PlatformCollector(registry=None))
        else:
            if registry is None:
                raise ValueError("a registry is needed without a multiprocess directory")
            # The default registry's standard collectors, on ours (one per app, not global).
            ProcessCollector(registry=registry)
            PlatformCollector(registry=registry)
            GCCollector(registry)
            self._collectors.append(registry)

    @property
    def multiprocess(self) -> bool:
        return self._multiprocess_dir is not None

    def recorded_families(self) -> list[Metric]:
        """Every metric recorded so far (all workers' in multiprocess mode)."""
        families: list[Metric] = []
        for collector in self._collectors:
            families.extend(collector.collect())
        return families

    def render(self, snapshot: QueueSnapshot | None) -> bytes:
        families = self.recorded_families()
        families += self._worker_process_families()
        families += self._derived_families(families)
        if snapshot is not None:
            families += queue_families(snapshot, int(time.time() * 1000))
        return generate_latest(_Families(families))

    def queue_totals(self) -> dict[str, dict[str, float]]:
        """Per queue, the totals of the per-queue counters (sent, received, ...); redeliveries
        by reason as `redelivered_<reason>`."""
        totals: dict[str, dict[str, float]] = {}
        for family in self.recorded_families():
            field_name = COUNTER_FIELDS.get(family.name)
            if field_name is None:
                continue
            for sample in family.samples:
                if sample.name.endswith("_total") and "queue" in sample.labels:
                    fields = totals.setdefault(sample.labels["queue"], {})
                    field = field_name
                    if "reason" in sample.labels:
                        field = f"{field_name}_{sample.labels['reason']}"
                    fields[field] = fields.get(field, 0) + sample.value
        return totals

    def _worker_process_families(self) -> list[Metric]:
        """Each live worker's process figures (read from /proc), labelled with its pid."""
        if self._multiprocess_dir is None:
            return []
        merged: dict[str, Metric] = {}
        for pid in live_worker_pids(self._multiprocess_dir):
            collector = ProcessCollector(pid=lambda pid=pid: pid, registry=None)  # type: ignore[misc]
            for family in _with_pid(collector.collect(), pid):
                if family.name in merged:
                    merged[family.name].samples += family.samples
                else:
                    merged[family.name] = family
        return list(merged.values())

    def _derived_families(self, families: Iterable[Metric]) -> list[Metric]:
        totals = {"cqs_cache_hits": 0.0, "cqs_cache_misses": 0.0}
        for family in families:
            if family.name in totals:
                totals[family.name] += sum(
                    s.value for s in family.samples if s.name.endswith("_total")
                )
        lookups = totals["cqs_cache_hits"] + totals["cqs_cache_misses"]
        workers = (
            len(live_worker_pids(self._multiprocess_dir))
            if self._multiprocess_dir is not None else 1
        )
        build = _gauge("cqs_build_info")
        build.add_metric([self._version], 1)
        return [
            _gauge("cqs_cache_hit_ratio", totals["cqs_cache_hits"] / lookups if lookups else 0.0),
            _gauge("cqs_worker_processes", workers),
            build,
        ]


def _gauge(name: str, value: float | None = None) -> GaugeMetricFamily:
    metric = info(name)
    if value is None:
        return GaugeMetricFamily(metric.name, metric.help, labels=metric.labels)
    return GaugeMetricFamily(metric.name, metric.help, value=value)


def queue_families(snapshot: QueueSnapshot, now_ms: int) -> list[Metric]:
    """The per-queue gauges of a statistics snapshot."""
    visible = _gauge("cqs_queue_visible_messages")
    in_flight = _gauge("cqs_queue_in_flight_messages")
    delayed = _gauge("cqs_queue_delayed_messages")
    oldest = _gauge("cqs_queue_oldest_message_age_seconds")
    state = _gauge("cqs_queue_cache_state")
    for name in sorted(snapshot.queues):
        figures = snapshot.queues[name]
        for cache_state in CacheState:
            state.add_metric([name, cache_state.value], 1 if figures.state is cache_state else 0)
        if figures.state is CacheState.UNAVAILABLE:
            continue  # unknown: better no sample than a wrong zero
        visible.add_metric([name], figures.visible)
        in_flight.add_metric([name], figures.in_flight)
        delayed.add_metric([name], figures.delayed)
        oldest.add_metric([name], snapshot.oldest_age_seconds(name))
    return [
        visible, in_flight, delayed, oldest, state,
        _gauge("cqs_queue_stats_read_duration_seconds", snapshot.read_seconds),
        _gauge("cqs_queue_stats_age_seconds", max(0, now_ms - snapshot.taken_ms) / 1000),
    ]
