"""Queue URLs <-> queue names: `http://<host>:<port>/<account-id>/<queue-name>`.

Owns how this endpoint names queues on the wire. The service speaks only queue names; the
handlers turn names into URLs here and URLs back into names. The host comes from a fixed
base URL when one is configured, else from the request (its scheme and Host header).
Imports `cqs.errors` and the standard library only.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from cqs.errors import InvalidAddress


def base_url_for(configured: str | None, scheme: str, host: str | None) -> str:
    """`http://host:port` with no trailing slash: the configured one, else the request's."""
    if configured:
        return configured.rstrip("/")
    return f"{scheme}://{host or 'localhost'}"


def queue_url(base_url: str, account_id: str, queue_name: str) -> str:
    return f"{base_url.rstrip('/')}/{account_id}/{queue_name}"


def queue_name_from_url(url: str) -> str:
    """The queue name a QueueUrl names: its last path segment, whatever the host.

    Clients often reach the endpoint under another host name than the one in the URL they
    were given, so the host is not checked; nor is the account id. A bare name (no scheme,
    no slash) is taken as the name itself.
    """
    try:
        path = urlsplit(url.strip()).path
    except ValueError as exc:
        raise InvalidAddress(f"The address {url} is not valid for this endpoint.") from exc
    segments = [segment for segment in path.split("/") if segment]
    if not segments:
        raise InvalidAddress(f"The address {url} is not valid for this endpoint.")
    return unquote(segments[-1])
