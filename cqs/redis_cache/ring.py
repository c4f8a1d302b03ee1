"""Consistent-hash ring mapping queue names to Redis servers.

Owns `HashRing`. Pure: no I/O. Imports only the standard library.

Each server gets `virtual_nodes` points on a 64-bit ring (the first 8 bytes of the md5 of
"<server>#<i>"); a queue belongs to the first point at or after its own hash. Adding a
server moves only the queues whose new owner is that server, about 1/N of them.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence

DEFAULT_VIRTUAL_NODES = 160


def ring_hash(text: str) -> int:
    digest = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big")


class HashRing:
    """Maps keys to one of `nodes`; the same nodes always give the same mapping."""

    def __init__(self, nodes: Sequence[str], virtual_nodes: int = DEFAULT_VIRTUAL_NODES) -> None:
        if not nodes:
            raise ValueError("a hash ring needs at least one node")
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"duplicate nodes in {list(nodes)!r}")
        if virtual_nodes < 1:
            raise ValueError("virtual_nodes must be at least 1")
        points = sorted(
            (ring_hash(f"{node}#{index}"), node)
            for node in nodes
            for index in range(virtual_nodes)
        )
        self._nodes = tuple(nodes)
        self._hashes = [point for point, _ in points]
        self._owners = [node for _, node in points]

    @property
    def nodes(self) -> tuple[str, ...]:
        return self._nodes

    def node_for(self, key: str) -> str:
        index = bisect.bisect_left(self._hashes, ring_hash(key))
        if index == len(self._hashes):
            index = 0  # past the last point: wrap around to the first
        return self._owners[index]
