"""RedisPromotionLeases: the `PromotionLeases` port, one lease key per queue on the queue's
own Redis server (the ring's choice, as for its cache).

Owns the promoter lease of timer messages (issue #19): taken or renewed with the
`sweep_lease` script (the same take-or-renew rule, on a per-queue key) and given back with
`release_lease`. A lost Redis loses the leases too; promotion is idempotent, so two
promoters for a moment cost work, not duplicates. Imports model, errors and this package;
never the service or cassandra.
"""

from __future__ import annotations

from redis.commands.core import AsyncScript

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.keys import promotion_lease_key
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.scripts import script_source


class RedisPromotionLeases:
    def __init__(self, pool: ServerPool) -> None:
        self._pool = pool
        self._claim: dict[int, AsyncScript] = {}
        self._release: dict[int, AsyncScript] = {}
        claim_source, release_source = script_source("sweep_lease"), script_source("release_lease")
        for server in pool.servers:
            self._claim[id(server)] = server.client.register_script(claim_source)
            self._release[id(server)] = server.client.register_script(release_source)

    async def claim(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        server = self._pool.holder_of(queue)
        reply = await self._pool.call(
            server, self._claim[id(server)],
            keys=[promotion_lease_key(queue)], args=[owner, lease_ms],
        )
        return bool(reply)

    async def release(self, queue: QueueIdentity, owner: str) -> None:
        server = self._pool.holder_of(queue)
        await self._pool.call(
            server, self._release[id(server)], keys=[promotion_lease_key(queue)], args=[owner]
        )

    async def close(self) -> None:
        await self._pool.close()
