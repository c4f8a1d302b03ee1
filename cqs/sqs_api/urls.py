"""Queue URLs <-> queue names: `http://<host>:<port>/<account-id>/<queue-name>`.

A consumer group's queue name is `<queue>/<group>`, so its URL has one more segment:
`http://<host>:<port>/<account-id>/<queue-name>/<group-name>`.

Owns how this endpoint names queues on the wire. The service speaks only queue names; the
handlers turn names into URLs here and URLs back into names. The host comes from a fixed
base URL when one is configured, else from the request (its scheme and Host header, which
must be a plain host[:port]: the URL never carries header junk). A URL names its owner's
account; access control (`QueueService.access`) decides whether the caller may reach it.
Imports `cqs.domain.errors` and the standard library only.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote, urlsplit

from cqs.domain.errors import InvalidParameterValue, QueueDoesNotExist

# RFC 3986 host[:port], narrowed to what names a server in practice: a DNS-style name (or
# IPv4 address) of unreserved characters, or a bracketed IPv6 address; a port of 1-5 digits.
_HOST_HEADER = re.compile(
    r"(?P<host>[A-Za-z0-9._~-]{1,253}|\[(?P<ipv6>[0-9A-Fa-f:.]{2,45})\])(?::(?P<port>[0-9]{1,5}))?"
)


def base_url_for(configured: str | None, scheme: str, host: str | None) -> str:
    """`http://host:port` with no trailing slash: the configured one, else the request's.

    A request's Host that is not a valid host[:port] is refused (InvalidParameterValue).
    """
    if configured:
        return configured.rstrip("/")
    if host is None:
        return f"{scheme}://localhost"
    if not is_valid_host(host):
        raise InvalidParameterValue(
            "The Host header is invalid. Reason: it must be a host name, an IPv4 address or a"
            " bracketed IPv6 address, optionally followed by :port."
        )
    return f"{scheme}://{host}"


def is_valid_host(host: str) -> bool:
    """Whether `host` is a Host header value fit to put in a URL: host[:port]."""
    match = _HOST_HEADER.fullmatch(host)
    if match is None:
        return False
    port = match.group("port")
    if port is not None and not 0 < int(port) <= 65_535:
        return False
    ipv6 = match.group("ipv6")
    if ipv6 is not None:
        try:
            ipaddress.IPv6Address(ipv6)
        except ValueError:
            return False
    return True


# An AWS region's shape: two letters, one or more words, a number (us-west-2, us-gov-east-1).
_REGION_LABEL = r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}"
# SQS endpoint names that carry a region, as AWS and LocalStack form them:
# sqs.<region>.amazonaws.com, sqs.<region>.localhost.localstack.cloud (and any such suffix),
# and the legacy <region>.queue.amazonaws.com (<region>.queue.localhost.localstack.cloud).
_REGIONAL_HOST = re.compile(
    rf"(?:sqs\.(?P<sqs>{_REGION_LABEL})|(?P<legacy>{_REGION_LABEL})\.queue)\.[a-z0-9.-]+"
)


def region_of_host(host: str | None) -> str | None:
    """The region a Host header names (`sqs.us-west-2.amazonaws.com:443` -> us-west-2), or
    None when it names none: only the exact endpoint shapes count, never a guess."""
    if host is None or not is_valid_host(host):
        return None
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else ""
    match = _REGIONAL_HOST.fullmatch(name.lower().rstrip("."))
    if match is None:
        return None
    return match.group("sqs") or match.group("legacy")


def queue_url(base_url: str, account_id: str, queue_name: str) -> str:
    return f"{base_url.rstrip('/')}/{account_id}/{queue_name}"


def queue_name_from_url(url: str, account_id: str) -> str:
    """The queue name a QueueUrl of `account_id` names (QueueDoesNotExist for a URL of
    another account)."""
    owner, name = queue_address_from_url(url, account_id)
    if owner != account_id:
        raise QueueDoesNotExist("The specified queue does not exist.")
    return name


_ACCOUNT_ID = re.compile(r"[0-9]{12}")


def queue_address_from_url(url: str, default_account_id: str) -> tuple[str, str]:
    """(owner account id, queue name) of a QueueUrl: its last two path segments, whatever
    the host, or its last three when the first of them is an account id (12 digits): a
    consumer group's URL `<account>/<queue>/<group>` names the queue `<queue>/<group>`.

    Clients often reach the endpoint under another host name than the one in the URL they
    were given, so the host is not checked. A URL naming no queue at all (no path, not a
    URL) is QueueDoesNotExist (400), as SQS answers it, not InvalidAddress. A bare name (no scheme, no slash) names a queue
    of `default_account_id` (the caller's); whether the caller may reach another account's
    queue is for access control to decide.
    """
    try:
        path = urlsplit(url.strip()).path
    except ValueError as exc:
        raise QueueDoesNotExist("The specified queue does not exist.") from exc
    segments = [unquote(segment) for segment in path.split("/") if segment]
    if not segments:
        raise QueueDoesNotExist("The specified queue does not exist.")
    if len(segments) >= 3 and _ACCOUNT_ID.fullmatch(segments[-3]):
        # `<account>/<queue>/<group>`: a consumer group, served as the queue `<queue>/<group>`.
        return segments[-3], f"{segments[-2]}/{segments[-1]}"
    if len(segments) >= 2:
        return segments[-2], segments[-1]
    return default_account_id, segments[-1]
