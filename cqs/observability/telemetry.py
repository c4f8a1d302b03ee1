"""PrometheusTelemetry: the `Telemetry` port recorded as Prometheus metrics.

Owns turning the events the service, the revisibility worker, the API middleware and the
storage adapters report into the metrics of `metrics.py`: counters, histograms, and the
little per-process state some of them need (when a fill started, since when a queue is
served from Cassandra). Imports the metric definitions only; never the service, an
adapter or aiohttp.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cqs.domain.model import Redelivery
from cqs.observability.metrics import CqsMetrics

# A queue served from Cassandra accrues time between two receive passes of this process;
# a longer silence counts only this long (nobody watched the queue meanwhile).
STORE_MODE_GAP_CAP_SECONDS = 60.0


class PrometheusTelemetry:
    """Implements `cqs.ports.Telemetry`; `observe_backend` is the adapters' observer."""

    def __init__(
        self, metrics: CqsMetrics, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._metrics = metrics
        self._clock = clock
        self._fills_started: dict[str, float] = {}
        self._served_from_store_since: dict[str, float] = {}
        self._backend_series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    # --- messages ---------------------------------------------------------------------------
    def messages_sent(self, queue_name: str, count: int) -> None:
        self._metrics.messages_sent.labels(queue_name).inc(count)

    def messages_received(self, queue_name: str, count: int, from_cache: bool) -> None:
        source = "cache" if from_cache else "store"
        self._metrics.messages_received.labels(queue_name, source).inc(count)
        (self._metrics.cache_hits if from_cache else self._metrics.cache_misses).inc()

    def messages_deleted(self, queue_name: str, count: int) -> None:
        self._metrics.messages_deleted.labels(queue_name).inc(count)

    def messages_expired(self, queue_name: str, count: int) -> None:
        if count:  # the trim visits every queue every 30 s: no series for queues without any
            self._metrics.messages_expired.labels(queue_name).inc(count)

    def messages_moved_to_dead_letter_queue(self, queue_name: str, count: int) -> None:
        self._metrics.messages_dead_lettered.labels(queue_name).inc(count)

    def messages_redelivered(self, queue_name: str, reason: Redelivery, count: int) -> None:
        if count:
            self._metrics.messages_redelivered.labels(queue_name, reason.value).inc(count)

    # --- the cache ----------------------------------------------------------------------------
    def serving_from_store(self, queue_name: str, active: bool) -> None:
        now = self._clock()
        since = self._served_from_store_since.get(queue_name)
        if since is not None:
            self._metrics.serving_from_store_seconds.labels(queue_name).inc(
                min(max(0.0, now - since), STORE_MODE_GAP_CAP_SECONDS)
            )
        if active:
            self._served_from_store_since[queue_name] = now
        else:
            self._served_from_store_since.pop(queue_name, None)

    def fill_started(self, queue_name: str) -> None:
        if queue_name not in self._fills_started:
            self._metrics.cache_fills_in_progress.inc()
        self._fills_started[queue_name] = self._clock()

    def fill_progress(self, queue_name: str, messages: int) -> None:
        self._metrics.cache_fill_messages.inc(messages)

    def fill_finished(self, queue_name: str, completed: bool) -> None:
        started = self._fills_started.pop(queue_name, None)
        if started is None:  # already reported
            return
        self._metrics.cache_fills_in_progress.dec()
        self._metrics.cache_fills.labels("completed" if completed else "abandoned").inc()
        if completed:
            self._metrics.cache_fill_duration.observe(self._clock() - started)

    # --- API and worker ---------------------------------------------------------------------
    def long_poll_waiting(self, delta: int) -> None:
        self._metrics.long_polls_waiting.inc(delta)

    def sweep(self, duration_seconds: float, released_queues: int, lag_ms: int) -> None:
        self._metrics.sweep_duration.observe(duration_seconds)
        if released_queues:
            self._metrics.released_queues.inc(released_queues)
            self._metrics.revisibility_lag.observe(lag_ms / 1000)

    def request_finished(self, action: str, outcome: str, duration_seconds: float) -> None:
        self._metrics.api_requests.labels(action, outcome).inc()
        self._metrics.api_request_duration.labels(action).observe(duration_seconds)

    # --- storage adapters -------------------------------------------------------------------
    def observe_backend(
        self, backend: str, server: str, operation: str, seconds: float, ok: bool
    ) -> None:
        """One Redis or Cassandra call; runs on every call, so the series are kept at hand."""
        key = (backend, server, operation)
        series = self._backend_series.get(key)
        if series is None:
            series = (
                self._metrics.backend_duration.labels(*key),
                self._metrics.backend_errors.labels(*key),
            )
            self._backend_series[key] = series
        series[0].observe(seconds)
        if not ok:
            series[1].inc()

    def observe_pool_wait(self, backend: str, server: str, seconds: float, admitted: bool) -> None:
        """A call waited for a connection slot; not `admitted`: it gave up (a 503)."""
        self._metrics.pool_wait.labels(backend, server).observe(seconds)
        if not admitted:
            self._metrics.pool_exhausted.labels(backend, server).inc()
