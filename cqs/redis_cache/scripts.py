"""Loads the Lua scripts of `lua/` and registers them with a redis-py client.

Owns the script catalogue (`QueueScripts`) and the `--!include <file>` expansion that lets
scripts share `lua/_common.lua`. Imports redis only for types; never imports the service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from importlib import resources

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

_INCLUDE = re.compile(r"^--!include (\S+)$", re.MULTILINE)


def _read(file_name: str) -> str:
    return resources.files("cqs.redis_cache").joinpath("lua").joinpath(file_name).read_text("utf-8")


def script_source(name: str) -> str:
    """The text of `lua/<name>.lua` with every `--!include` line replaced by the file."""
    return _INCLUDE.sub(lambda match: _read(match.group(1)), _read(f"{name}.lua"))


@dataclass(frozen=True, slots=True)
class QueueScripts:
    """One registered script per cache operation, bound to one server's client.

    Every script but `sweep_lease` is a queue script taking `QueueKeys.script_keys()`.
    """

    begin_fill: AsyncScript
    renew_fill: AsyncScript
    finish_fill: AsyncScript
    hide_store_deliveries: AsyncScript
    add: AsyncScript
    load: AsyncScript
    receive: AsyncScript
    delete: AsyncScript
    change_visibility: AsyncScript
    release_due: AsyncScript
    purge: AsyncScript
    drop: AsyncScript
    reset: AsyncScript
    trim_expired: AsyncScript
    defer_store_delete: AsyncScript
    forget_store_deletes: AsyncScript
    admit: AsyncScript
    abandon: AsyncScript
    receive_fifo: AsyncScript
    load_deduplications: AsyncScript
    sweep_lease: AsyncScript  # per server, not per queue: its only key is cqs:sweeper


SCRIPT_NAMES: tuple[str, ...] = tuple(field.name for field in fields(QueueScripts))


def register_scripts(client: Redis) -> QueueScripts:
    """Register every script with `client`; redis-py loads each on first use (EVALSHA)."""
    return QueueScripts(
        **{name: client.register_script(script_source(name)) for name in SCRIPT_NAMES}
    )
