"""Observability of cqs: Prometheus metrics, health and readiness, per-queue statistics.

The service and the adapters know nothing of Prometheus: they report events through the
`cqs.ports.Telemetry` port (and the adapters' `observe` callables), which
`telemetry.PrometheusTelemetry` records. `hub.ObservabilityHub` ties the parts together for
the composition root; `routes.add_observability_routes` serves them. docs/metrics.md lists
every metric. Imports Prometheus, aiohttp (its routes), the domain and the service (for the
queue statistics); never an adapter, a storage port, Redis or Cassandra.
"""
