"""The cache as one Redis Cluster, or as one primary that Sentinel fails over: each is one
`RedisServer` to the rest of the adapter, with the same limits, breaker and failure rules.

Owns how these two reach Redis:
- `ClusterServer` holds redis-py's cluster client, which reads the slot map from the seed
  nodes, follows MOVED and ASK (resharding, failover) and reloads the map when a node stops
  answering. A script runs on the node that owns its queue's slot (every key of a queue
  shares the queue's hash tag). Script calls go through an auto-pipeline per node (as on a
  single server), and through the cluster client when a node redirects them. The breaker is
  the whole cluster's: while a primary is down and not yet replaced, its calls fail as
  `CacheUnreachable` (the replica taking over has the data, so nothing is handed out from
  Cassandra in its place: receives wait for the failover, sends are kept in Cassandra);
- `SentinelServer` is a single server whose connections ask the Sentinels for the current
  primary, and drop themselves when the server they reach has become a replica.
Imports redis and this package; never the service or aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Sequence
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    RedisClusterException,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from cqs.redis_cache.pipelining import ScriptPipeline
from cqs.redis_cache.servers import (
    BackendObserver,
    PoolObserver,
    RedisServer,
    ServerLimits,
)
from cqs.redis_cache.topology import RedisTopology, TopologyKind

# A call that meets a failed node reloads the slot map and tries again this many times; a
# primary that is gone for good is replaced only after the cluster's node timeout, which is
# longer than a request may wait, so the call then fails and the service uses Cassandra.
CLUSTER_ATTEMPTS = 2


class _TopologyServer(RedisServer):
    """A cluster or Sentinel topology as one server of the pool, named by the topology."""

    replicated = True  # a promoted replica comes up with the data: never "gone"

    def __init__(
        self,
        topology: RedisTopology,
        limits: ServerLimits,
        *,
        observe: BackendObserver | None = None,
        observe_pool: PoolObserver | None = None,
    ) -> None:
        self._topology = topology  # before the clients: `_new_client` reads it
        super().__init__(
            topology.label, limits, observe=observe, observe_pool=observe_pool,
            label=topology.label,
        )


class ClusterServer(_TopologyServer):
    """A whole Redis Cluster as one server of the pool."""

    # A slot without a primary (failover under way), a multi-key script meeting a slot in
    # migration (TRYAGAIN) after the client's retries: the cluster is up but cannot take
    # the call now (CacheUnreachable: the service waits for it, keeping sends in Cassandra).
    refusing = (*RedisServer.refusing, ClusterError, RedisClusterException, TryAgainError)

    def _new_client(self, *, max_connections: int | None, socket_timeout: float | None = None) -> Redis:
        cluster = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in self._topology.nodes],
            username=self._topology.username,
            password=self._topology.password,
            socket_timeout=socket_timeout or self._limits.socket_timeout,
            socket_connect_timeout=self._limits.connect_timeout,
            retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), CLUSTER_ATTEMPTS),
            decode_responses=True,
            client_name="cqs",
            max_connections=max_connections or 2**31,  # per node
        )
        # The cluster client answers the same commands as a server's (routed by key slot);
        # the adapter only ever calls those.
        return cast("Redis", cluster)

    def _new_script_pipeline(self) -> Any:
        self._node_pipelines: dict[str, ScriptPipeline] = {}
        self._slot_map_reading: asyncio.Future[None] | None = None
        return None  # one pipeline per node, made on first use (`eval_script`)

    @property
    def cluster(self) -> RedisCluster:
        return cast("RedisCluster", self.client)

    @property
    def script_flushes(self) -> int:
        return sum(pipeline.flushes for pipeline in self._node_pipelines.values())

    async def eval_script(
        self, script: AsyncScript, keys: Sequence[str], args: Sequence[str | int]
    ) -> Any:
        """EVALSHA through the auto-pipeline of the node that owns the keys' slot, as for one
        server (the calls of a loop turn share one write per node).

        A redirect (MOVED, ASK: the slot moved or is moving; TRYAGAIN, CLUSTERDOWN) is an
        answer the script did not run, so the call is sent again through the cluster client,
        which follows it and reads the slot map again. A connection failure is ambiguous (the
        script may have run): it fails the call, as on one server, and the slot map is read
        again for the next calls (a failover may be under way)."""
        cluster = self.cluster
        await cluster.initialize()
        node = cluster.get_node_from_key(keys[0])
        if node is None:
            return await script(keys=keys, args=args)
        pipeline = self._node_pipelines.get(node.name)
        if pipeline is None:
            options = dict(node.connection_kwargs, retry=Retry(NoBackoff(), 0))
            pipeline = ScriptPipeline(node.connection_class(**options))
            self._node_pipelines[node.name] = pipeline
        try:
            return await pipeline.run(script, keys, args)
        except (AskError, MovedError, TryAgainError, ClusterDownError):
            return await script(keys=keys, args=args)
        except (RedisConnectionError, RedisTimeoutError, OSError):
            if self._node_pipelines.get(node.name) is pipeline:
                del self._node_pipelines[node.name]
                await pipeline.close()
            self._reread_slot_map()
            raise

    def _reread_slot_map(self) -> None:
        """Read the slot map again in the background, once at a time."""
        if self._slot_map_reading is None or self._slot_map_reading.done():
            self._slot_map_reading = asyncio.ensure_future(self._read_slot_map())

    async def _read_slot_map(self) -> None:
        with contextlib.suppress(Exception):
            await self.cluster.nodes_manager.initialize()

    async def _drop_idle_connections(self) -> None:
        pass  # the cluster client drops a failed node's connections itself

    async def _ping_on_fresh_connection(self) -> bool:
        """Whether every primary of a freshly read slot map answers: then the cluster is up
        and the failed call met a slow process, or a failover already over."""
        probe = cast("RedisCluster", self._new_client(max_connections=2))
        try:
            async with asyncio.timeout(4 * self._limits.socket_timeout):
                await probe.initialize()
                await probe.ping(target_nodes=RedisCluster.PRIMARIES)
            return True
        except Exception:
            return False
        finally:
            with contextlib.suppress(Exception):
                await probe.aclose()

    async def close(self) -> None:
        if self._slot_map_reading is not None:
            self._slot_map_reading.cancel()
        for pipeline in self._node_pipelines.values():
            await pipeline.close()
        await self.client.aclose()
        await self.feed_client.aclose()


class SentinelServer(_TopologyServer):
    """The primary that the Sentinels of `topology` name, whichever server that is now."""

    @functools.cached_property
    def _sentinel(self) -> Sentinel:
        """The Sentinels' client, made with the first client (while the server is built)."""
        return Sentinel(  # type: ignore[no-untyped-call]
            list(self._topology.nodes),
            sentinel_kwargs={
                "socket_timeout": self._limits.socket_timeout,
                "socket_connect_timeout": self._limits.connect_timeout,
                "decode_responses": True,
            },
        )

    def _new_client(self, *, max_connections: int | None, socket_timeout: float | None = None) -> Redis:
        client: Redis = self._sentinel.master_for(
            self._topology.primary_name,
            username=self._topology.username,
            password=self._topology.password,
            socket_timeout=socket_timeout or self._limits.socket_timeout,
            socket_connect_timeout=self._limits.connect_timeout,
            health_check_interval=0,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
            client_name="cqs",
            max_connections=max_connections or 2**31,
        )
        return client


def one_cache_server(
    topology: RedisTopology,
    limits: ServerLimits,
    *,
    observe: BackendObserver | None = None,
    observe_pool: PoolObserver | None = None,
) -> RedisServer:
    """The single server of the pool that a cluster or Sentinel topology makes."""
    if topology.kind is TopologyKind.CLUSTER:
        return ClusterServer(topology, limits, observe=observe, observe_pool=observe_pool)
    if topology.kind is TopologyKind.SENTINEL:
        return SentinelServer(topology, limits, observe=observe, observe_pool=observe_pool)
    raise ValueError(f"{topology.kind} is not one cache")
