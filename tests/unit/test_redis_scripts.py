"""The Lua scripts: documented headers, shared helpers pasted in, keys only from KEYS."""

from __future__ import annotations

import re

import pytest

from cqs.redis_cache.scripts import SCRIPT_NAMES, script_source


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_script_opens_with_a_header_naming_keys_argv_and_return(name: str) -> None:
    header = script_source(name).split("\n\n")[0]
    lines = header.splitlines()
    assert lines[0].startswith(f"-- {name}:")
    for label in ("-- KEYS:", "-- ARGV:", "-- Returns:"):
        assert any(line.startswith(label) for line in lines), f"{name} lacks {label}"


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_include_is_expanded(name: str) -> None:
    assert "--!include" not in script_source(name)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_no_script_builds_a_key_name_itself(name: str) -> None:
    code = "\n".join(
        line for line in script_source(name).splitlines() if not line.lstrip().startswith("--")
    )
    assert not re.search(r"['\"]cqs:", code)
