"""The pool of Redis servers behind the cache: which server holds a queue, and the
operation label each call is observed under.

Owns the choice of topology (`topology.py`): independent servers on cqs's consistent-hash
ring, each a `RedisServer`, or one Redis Cluster or Sentinel-managed primary, a single
server of the pool (`managed_servers.py`). Imports redis (through its servers), the ring
and the scripts; never the service or aiohttp.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from redis.commands.core import AsyncScript

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.managed_servers import one_cache_server
from cqs.redis_cache.ring import HashRing
from cqs.redis_cache.scripts import SCRIPT_NAMES
from cqs.redis_cache.servers import (
    BackendObserver,
    PoolObserver,
    RedisServer,
    RedisTls,
    ServerLimits,
    ring_node,
    server_label,
)
from cqs.redis_cache.topology import TopologyKind, parse_topology

T = TypeVar("T")
P = ParamSpec("P")


class ServerPool:
    """The servers of one ring (or the one cluster or Sentinel-managed primary): which one
    holds a queue, and one labelled call on one of them."""

    @property
    def clustered(self) -> bool:
        """Whether the queues are spread over the slots of one Redis Cluster: then nothing
        may be shared by several queues in a script (no per-server keys)."""
        return self.topology.kind is TopologyKind.CLUSTER

    def __init__(
        self,
        urls: Sequence[str],
        limits: ServerLimits,
        *,
        observe: BackendObserver | None = None,
        observe_pool: PoolObserver | None = None,
        tls: RedisTls | None = None,
    ) -> None:
        self.topology = parse_topology(urls)
        if self.topology.one_cache:
            only = one_cache_server(
                self.topology, limits, observe=observe, observe_pool=observe_pool
            )
            self._servers: dict[str, RedisServer] = {only.label: only}
        else:
            self._servers = {
                ring_node(url): RedisServer(
                    url, limits, observe=observe, observe_pool=observe_pool, tls=tls
                )
                for url in urls
            }
        self._ring = HashRing(list(self._servers))
        # id of a registered script -> its name (the operation label of its calls)
        self._operation_names: dict[int, str] = {
            id(getattr(server.scripts, name)): name
            for server in self._servers.values()
            for name in SCRIPT_NAMES
        }

    @property
    def servers(self) -> list[RedisServer]:
        return list(self._servers.values())

    def url_for(self, queue: QueueIdentity) -> str:
        """The ring node (URL without credentials) of the Redis server holding the queue."""
        return self._ring.node_for(queue.key)

    def holder_of(self, queue: QueueIdentity) -> RedisServer:
        """The Redis server holding the queue."""
        return self._servers[self.url_for(queue)]

    async def call(
        self,
        server: RedisServer,
        operation: Callable[P, Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run one Redis operation on `server` (its limits and failure translation)."""
        return await server.call(self._operation_name(operation), operation, *args, **kwargs)

    async def run_script(
        self,
        server: RedisServer,
        script: AsyncScript,
        keys: Sequence[str],
        args: Sequence[str | int],
    ) -> Any:
        """Run one of `server`'s registered scripts, labelled with the script's name."""
        return await server.call(
            self._operation_name(script), server.eval_script, script, keys, args
        )

    def _operation_name(self, operation: object) -> str:
        """A script's name, a command's name, or the method a local helper serves."""
        name = self._operation_names.get(id(operation))
        if name is None:
            qualname = getattr(operation, "__qualname__", "call")
            name = qualname.split(".<locals>")[0].rsplit(".", 1)[-1].lstrip("_")
        return name

    async def close(self) -> None:
        for server in self._servers.values():
            await server.close()


def cache_labels(urls: Sequence[str]) -> list[str]:
    """How metrics and the readiness probe name each server of the cache `urls` make."""
    topology = parse_topology(urls)
    if topology.one_cache:
        return [topology.label]
    return [server_label(url) for url in urls]
