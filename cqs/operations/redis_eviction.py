"""The start-up check of each Redis server's `maxmemory-policy`.

Owns the rule: the cache holds the only hot copy of in-flight state, FIFO deduplication
entries and fill leases, and an evicting policy drops them silently (a READY cache that
lost a payload or a key no longer says so). So an API process refuses to start when a
server's policy is anything but `noeviction`, unless `redis_eviction_allowed` is set, which
turns the refusal into a warning. A server whose policy cannot be read (CONFIG renamed or
refused, as managed services may; the server down) is a warning, never a refusal.
Imports the Redis cache adapter; the composition root calls it.
"""

from __future__ import annotations

import logging

from cqs.redis_cache.cache import RedisMessageCache

log = logging.getLogger(__name__)

SAFE_POLICY = "noeviction"


class EvictingRedis(RuntimeError):
    """A Redis server of the cache may evict keys, and that was not allowed."""


async def check_eviction_policies(cache: RedisMessageCache, *, allowed: bool) -> None:
    """Refuse (EvictingRedis) or warn about servers whose policy may evict keys."""
    evicting: list[str] = []
    for label, policy in (await cache.eviction_policies()).items():
        if policy is None:
            log.warning(
                "could not read maxmemory-policy of Redis server %s; cqs needs %s",
                label, SAFE_POLICY,
            )
        elif policy != SAFE_POLICY:
            evicting.append(f"{label} has maxmemory-policy {policy}")
    if not evicting:
        return
    problem = (
        "; ".join(evicting) + f": evicted keys lose messages silently. Set maxmemory-policy "
        f"{SAFE_POLICY} (see docs/reliability.md), or allow it with "
        "CQS_REDIS_EVICTION_ALLOWED=true"
    )
    if not allowed:
        raise EvictingRedis(problem)
    log.warning("%s (allowed by redis_eviction_allowed)", problem)
