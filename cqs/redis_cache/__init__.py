"""The Redis message cache: key layout, hash ring, Lua scripts and the cache adapter.

Implements the `MessageCache` port (`cqs/ports/`) as `RedisMessageCache`. Imports model
and errors only; never the service, aiohttp or cassandra.
"""

from __future__ import annotations

from cqs.redis_cache.cache import RedisMessageCache

__all__ = ["RedisMessageCache"]
