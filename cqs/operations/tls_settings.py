"""Which TLS the settings ask for: the API's HTTPS context, and each backend's client side.

Owns turning the `tls_*`, `redis_tls_*` and `cassandra_tls_*` settings into what serving
and the adapters take (an `ssl.SSLContext`, a `RedisTls`), and checking every file before
anything starts, so a bad one stops `cqs serve` with one line (`TlsFilesError`) instead of
failing each worker, or each connection, later. Imports the settings, `cqs.operations.tls` and the
Redis adapter's `RedisTls`; never the service or aiohttp.
"""

from __future__ import annotations

import ssl

from cqs.operations.tls import client_context, server_context
from cqs.redis_cache.servers import RedisTls
from cqs.settings import Settings


def api_scheme(settings: Settings) -> str:
    return "https" if settings.tls_cert is not None else "http"


def api_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The HTTPS context of `tls_cert` and `tls_key`, or None (plain HTTP); TlsFilesError
    when they do not load."""
    if settings.tls_cert is None or settings.tls_key is None:
        return None
    return server_context(settings.tls_cert, settings.tls_key)


def cassandra_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """Client-to-node TLS when any `cassandra_tls_*` file is set. With a CA file, a node's
    certificate must be signed by that CA alone, its name unchecked (the driver reaches
    every node by the address the cluster reports, which certificates seldom list); without
    one, by a CA the system trusts, for the node's address (docs/operations.md)."""
    files = (
        settings.cassandra_tls_ca_file,
        settings.cassandra_tls_cert_file,
        settings.cassandra_tls_key_file,
    )
    if all(path is None for path in files):
        return None
    ca_file = settings.cassandra_tls_ca_file
    return client_context(*files, setting="cassandra_tls", check_hostname=ca_file is None)


def redis_tls(settings: Settings) -> RedisTls:
    """How `rediss://` servers are verified, and the client certificate they may ask for."""
    return RedisTls(
        *(
            None if path is None else str(path)
            for path in (
                settings.redis_tls_ca_file,
                settings.redis_tls_cert_file,
                settings.redis_tls_key_file,
            )
        )
    )


def check_backend_tls_files(settings: Settings) -> None:
    """TlsFilesError now, rather than at the first connection, for a backend TLS file
    that does not load."""
    cassandra_tls_context(settings)
    if any(url.startswith("rediss://") for url in settings.redis_urls):
        client_context(
            settings.redis_tls_ca_file,
            settings.redis_tls_cert_file,
            settings.redis_tls_key_file,
            setting="redis_tls",
        )
