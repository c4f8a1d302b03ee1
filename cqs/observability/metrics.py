"""Every cqs metric, defined once: name, type, labels, meaning, buckets.

Owns the catalogue of `cqs_<what>_<unit>` metrics (counters end in `_total`): those recorded
as things happen (`CqsMetrics` builds them as prometheus-client objects, fed by
`telemetry.PrometheusTelemetry`) and those computed when scraped (`SCRAPED`, rendered by
`exposition.py` from the per-queue statistics). `docs/metrics.md` explains each. Imports
prometheus-client only; never the service, an adapter or aiohttp.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 21.0)  # long polls wait up to 20 s
BACKEND_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0)
FILL_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
SWEEP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
LAG_BUCKETS = (0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    name: str  # as exposed: counters with `_total`
    kind: str  # counter | gauge | histogram
    labels: tuple[str, ...]
    help: str
    buckets: tuple[float, ...] = ()
    # How worker processes' values combine (gauges in prometheus-client multiprocess mode).
    multiprocess_mode: str = "livesum"

    @property
    def sample_names(self) -> tuple[str, ...]:
        """The series names a scrape shows for this metric (what PromQL refers to)."""
        if self.kind == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


def _counter(name: str, labels: tuple[str, ...], text: str) -> MetricInfo:
    return MetricInfo(name, "counter", labels, text)


def _histogram(
    name: str, labels: tuple[str, ...], text: str, buckets: tuple[float, ...]
) -> MetricInfo:
    return MetricInfo(name, "histogram", labels, text, buckets)


# Recorded as things happen, in every worker process.
RECORDED: tuple[MetricInfo, ...] = (
    _counter("cqs_messages_sent_total", ("queue",),
             "Messages stored durably by SendMessage / SendMessageBatch."),
    _counter("cqs_messages_received_total", ("queue", "source"),
             "Messages handed out by ReceiveMessage; source is cache (Redis) or store "
             "(Cassandra, Return-From-Cassandra)."),
    _counter("cqs_messages_deleted_total", ("queue",),
             "Messages deleted by DeleteMessage / DeleteMessageBatch."),
    _counter("cqs_messages_expired_total", ("queue",),
             "Cached messages dropped after their queue's retention period."),
    _counter("cqs_messages_moved_to_dead_letter_queue_total", ("queue",),
             "Messages moved to the queue's dead-letter queue after maxReceiveCount receives."),
    _counter("cqs_messages_redelivered_total", ("queue", "reason"),
             "Deliveries that repeat, or may repeat, an earlier delivery of the same message. "
             "reason: visibility_timeout (received again after its visibility timeout passed "
             "without a delete, or was set to 0: expected), store_fallback (handed out from "
             "Cassandra while the queue's cache was not ready: may repeat a delivery still in "
             "flight), refill (first delivery from a refilled cache: may repeat a delivery "
             "made before the cache was lost)."),
    _counter("cqs_cache_hits_total", (),
             "Receive passes answered by the Redis cache."),
    _counter("cqs_cache_misses_total", (),
             "Receive passes answered by Cassandra (cache absent, filling or unreachable)."),
    _counter("cqs_cache_fills_total", ("outcome",),
             "Cache fills that ended; outcome is completed or abandoned."),
    _histogram("cqs_cache_fill_duration_seconds", (),
               "Duration of completed cache fills.", FILL_BUCKETS),
    _counter("cqs_cache_fill_messages_total", (),
             "Messages loaded into Redis by cache fills."),
    MetricInfo("cqs_cache_fills_in_progress", "gauge", (),
               "Cache fills running now, across worker processes."),
    _counter("cqs_cache_serving_from_store_seconds_total", ("queue",),
             "Time the queue was served from Cassandra (Return-From-Cassandra mode)."),
    _counter("cqs_api_requests_total", ("action", "outcome"),
             "SQS API requests; outcome is success or the SQS error code answered."),
    _histogram("cqs_api_request_duration_seconds", ("action",),
               "SQS API request latency (long polls include their wait).", REQUEST_BUCKETS),
    MetricInfo("cqs_api_long_polls_waiting", "gauge", (),
               "ReceiveMessage long polls waiting for messages now, across worker processes."),
    _histogram("cqs_backend_request_duration_seconds", ("backend", "server", "operation"),
               "Latency of Redis and Cassandra calls, by server and operation.", BACKEND_BUCKETS),
    _counter("cqs_backend_errors_total", ("backend", "server", "operation"),
             "Redis and Cassandra calls that failed, by server and operation."),
    _histogram("cqs_backend_pool_wait_seconds", ("backend", "server"),
               "Time calls waited for a free connection slot (only calls that had to wait): "
               "back-pressure, not an outage.", BACKEND_BUCKETS),
    _counter("cqs_backend_pool_exhausted_total", ("backend", "server"),
             "Calls refused with a retryable 503 after waiting the whole pool wait for a "
             "connection slot."),
    _histogram("cqs_revisibility_sweep_duration_seconds", (),
               "Duration of one revisibility pass over every Redis server.", SWEEP_BUCKETS),
    _histogram("cqs_revisibility_lag_seconds", (),
               "Upper bound of how late due in-flight / delayed messages became visible, per "
               "pass that released some.", LAG_BUCKETS),
    _counter("cqs_revisibility_released_queues_total", (),
             "Queues that got due messages back by a revisibility pass."),
)

# Computed when scraped (the per-queue figures come from one pipelined Redis read per server,
# cached for a couple of seconds).
SCRAPED: tuple[MetricInfo, ...] = (
    MetricInfo("cqs_queue_visible_messages", "gauge", ("queue",),
               "Messages waiting in the queue's visible list (ApproximateNumberOfMessages)."),
    MetricInfo("cqs_queue_in_flight_messages", "gauge", ("queue",),
               "Received messages not yet deleted, hidden until their visibility timeout."),
    MetricInfo("cqs_queue_delayed_messages", "gauge", ("queue",),
               "Messages sent with a delay that has not passed yet."),
    MetricInfo("cqs_queue_oldest_message_age_seconds", "gauge", ("queue",),
               "Age of the oldest visible message (0 when none is visible)."),
    MetricInfo("cqs_queue_cache_state", "gauge", ("queue", "state"),
               "1 for the queue's cache state: ready, filling, absent or unavailable; any "
               "state but ready means the queue is served from Cassandra."),
    MetricInfo("cqs_queue_stats_read_duration_seconds", "gauge", (),
               "How long the latest per-queue statistics read took (every Redis server)."),
    MetricInfo("cqs_queue_stats_age_seconds", "gauge", (),
               "Age of the per-queue statistics this scrape shows (they are cached briefly)."),
    MetricInfo("cqs_cache_hit_ratio", "gauge", (),
               "Cache hits / (hits + misses) since the server started."),
    MetricInfo("cqs_worker_processes", "gauge", (),
               "Worker processes whose metrics this scrape includes."),
    MetricInfo("cqs_build_info", "gauge", ("version",), "Always 1; the cqs version."),
)

CATALOG: tuple[MetricInfo, ...] = RECORDED + SCRAPED


def info(name: str) -> MetricInfo:
    for metric in CATALOG:
        if metric.name == name:
            return metric
    raise KeyError(name)


def sample_names() -> set[str]:
    """Every `cqs_` series name a scrape may show."""
    return {sample for metric in CATALOG for sample in metric.sample_names}


def _counter_object(metric: MetricInfo, registry: CollectorRegistry | None) -> Counter:
    return Counter(metric.name, metric.help, metric.labels, registry=registry)


class CqsMetrics:
    """The recorded metrics as prometheus-client objects, registered on `registry`.

    With `registry` None (multiprocess mode) they are registered nowhere: their values go to
    the multiprocess directory's files and a scrape reads every worker's files.
    """

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._registry = registry
        self.messages_sent = self._counter("cqs_messages_sent_total")
        self.messages_received = self._counter("cqs_messages_received_total")
        self.messages_deleted = self._counter("cqs_messages_deleted_total")
        self.messages_expired = self._counter("cqs_messages_expired_total")
        self.messages_dead_lettered = self._counter(
            "cqs_messages_moved_to_dead_letter_queue_total"
        )
        self.cache_hits = self._counter("cqs_cache_hits_total")
        self.cache_misses = self._counter("cqs_cache_misses_total")
        self.cache_fills = self._counter("cqs_cache_fills_total")
        self.cache_fill_duration = self._histogram("cqs_cache_fill_duration_seconds")
        self.cache_fill_messages = self._counter("cqs_cache_fill_messages_total")
        self.cache_fills_in_progress = self._gauge("cqs_cache_fills_in_progress")
        self.serving_from_store_seconds = self._counter(
            "cqs_cache_serving_from_store_seconds_total"
        )
        self.api_requests = self._counter("cqs_api_requests_total")
        self.api_request_duration = self._histogram("cqs_api_request_duration_seconds")
        self.long_polls_waiting = self._gauge("cqs_api_long_polls_waiting")
        self.backend_duration = self._histogram("cqs_backend_request_duration_seconds")
        self.backend_errors = self._counter("cqs_backend_errors_total")
        self.pool_wait = self._histogram("cqs_backend_pool_wait_seconds")
        self.pool_exhausted = self._counter("cqs_backend_pool_exhausted_total")
        self.messages_redelivered = self._counter("cqs_messages_redelivered_total")
        self.sweep_duration = self._histogram("cqs_revisibility_sweep_duration_seconds")
        self.revisibility_lag = self._histogram("cqs_revisibility_lag_seconds")
        self.released_queues = self._counter("cqs_revisibility_released_queues_total")

    def _counter(self, name: str) -> Counter:
        return _counter_object(info(name), self._registry)

    def _gauge(self, name: str) -> Gauge:
        metric = info(name)
        return Gauge(
            metric.name, metric.help, metric.labels, registry=self._registry,
            multiprocess_mode=metric.multiprocess_mode,  # type: ignore[arg-type]
        )

    def _histogram(self, name: str) -> Histogram:
        metric = info(name)
        return Histogram(
            metric.name, metric.help, metric.labels, registry=self._registry,
            buckets=metric.buckets,
        )
