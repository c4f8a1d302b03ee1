"""How the cache tier is laid out, read from `CQS_REDIS_URLS`: independent servers on cqs's
hash ring, one Redis Cluster, or one primary found through Sentinel.

Owns the parsing of the URL list into a `RedisTopology` and its rules:
- `redis://` / `rediss://` URLs: independent servers, each queue on the one the ring picks;
- `redis-cluster://[user:password@]host:port` entries: seed nodes of one Redis Cluster
  (any node will do; the client reads the slot map from them). Each queue's keys share a
  hash tag, so each queue lives in one slot;
- `redis-sentinel://[user:password@]host:port/<primary name>` entries: the Sentinels that
  watch the primary named by the path. The user name and password are the primary's.
A list must be of one kind: a cluster or a Sentinel setup is one cache, never a ring
member. Pure: imports only the standard library.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

CLUSTER_SCHEME = "redis-cluster"
SENTINEL_SCHEME = "redis-sentinel"
SERVER_SCHEMES = ("redis", "rediss")


class TopologyKind(enum.Enum):
    SERVERS = "servers"  # independent servers on cqs's hash ring
    CLUSTER = "cluster"
    SENTINEL = "sentinel"


@dataclass(frozen=True, slots=True)
class RedisTopology:
    """The cache tier one URL list names."""

    kind: TopologyKind
    urls: tuple[str, ...]  # SERVERS: the server URLs, as given
    nodes: tuple[tuple[str, int], ...] = ()  # CLUSTER: seed nodes; SENTINEL: the Sentinels
    primary_name: str = ""  # SENTINEL: the name Sentinel knows the primary by
    username: str | None = None
    password: str | None = None

    @property
    def label(self) -> str:
        """How logs, metrics and the readiness probe name the whole cache (no password)."""
        seeds = ",".join(f"{host}:{port}" for host, port in self.nodes)
        if self.kind is TopologyKind.CLUSTER:
            return f"cluster({seeds})"
        return f"sentinel({self.primary_name}@{seeds})"

    @property
    def one_cache(self) -> bool:
        """Whether the whole list is one cache (a cluster or a Sentinel-managed primary)."""
        return self.kind is not TopologyKind.SERVERS


def parse_topology(urls: Sequence[str]) -> RedisTopology:
    """Read the URL list; ValueError says what is wrong with it."""
    if not urls:
        raise ValueError("CQS_REDIS_URLS names no Redis server")
    schemes = {urlsplit(url).scheme for url in urls}
    if schemes <= set(SERVER_SCHEMES):
        return RedisTopology(TopologyKind.SERVERS, tuple(urls))
    if len(schemes) > 1:
        raise ValueError(
            f"CQS_REDIS_URLS mixes {sorted(schemes)}: list either servers (redis://), the seed "
            f"nodes of one cluster ({CLUSTER_SCHEME}://) or the Sentinels of one primary "
            f"({SENTINEL_SCHEME}://)"
        )
    [scheme] = schemes
    if scheme == CLUSTER_SCHEME:
        return _entries(TopologyKind.CLUSTER, urls)
    if scheme == SENTINEL_SCHEME:
        return _entries(TopologyKind.SENTINEL, urls)
    raise ValueError(f"unknown Redis URL scheme {scheme!r} in CQS_REDIS_URLS")


def _entries(kind: TopologyKind, urls: Sequence[str]) -> RedisTopology:
    nodes: list[tuple[str, int]] = []
    names: set[str] = set()
    credentials: set[tuple[str | None, str | None]] = set()
    for url in urls:
        parts = urlsplit(url)
        if not parts.hostname:
            raise ValueError(f"{kind.value} entry {_safe(url)!r} names no host")
        nodes.append((parts.hostname, parts.port or (26379 if kind is TopologyKind.SENTINEL
                                                     else 6379)))
        names.add(parts.path.strip("/"))
        credentials.add((
            unquote(parts.username) if parts.username else None,
            unquote(parts.password) if parts.password else None,
        ))
    if len(credentials) > 1:
        raise ValueError(f"the {kind.value} entries of CQS_REDIS_URLS carry different credentials")
    [(username, password)] = credentials
    if kind is TopologyKind.SENTINEL:
        if len(names) != 1 or "" in names:
            raise ValueError(
                f"every {SENTINEL_SCHEME}:// entry names the same primary as its path, "
                f"e.g. {SENTINEL_SCHEME}://host:26379/mymaster"
            )
        [primary] = names
        return RedisTopology(kind, (), tuple(nodes), primary, username, password)
    if names - {""}:
        raise ValueError(f"{CLUSTER_SCHEME}:// entries take no path (a cluster has one database)")
    return RedisTopology(kind, (), tuple(nodes), "", username, password)


def _safe(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port}{parts.path}"
