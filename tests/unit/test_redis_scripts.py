"""The Lua scripts: documented headers, shared helpers pasted in, keys only from KEYS."""

from __future__ import annotations

import re

import pytest

from cqs.domain.model import QueueIdentity
from cqs.redis_cache.keys import QueueKeys
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


# scripts that are not queue scripts, with how many keys they get
SERVER_SCRIPT_KEY_COUNTS = {"sweep_lease": 1}


def code_lines(name: str) -> str:
    return "\n".join(
        line for line in script_source(name).splitlines() if not line.lstrip().startswith("--")
    )


def documented_key_indexes(name: str) -> set[int]:
    """The [n] the header lists between `-- KEYS:` and `-- ARGV:`."""
    header = script_source(name).split("\n\n")[0]
    keys_block = header[header.index("-- KEYS:") : header.index("-- ARGV:")]
    return {int(index) for index in re.findall(r"\[(\d+)\]", keys_block)}


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_key_a_script_reads_is_named_in_its_header_and_passed_to_it(name: str) -> None:
    used = {int(index) for index in re.findall(r"KEYS\[(\d+)\]", code_lines(name))}
    passed = SERVER_SCRIPT_KEY_COUNTS.get(name, len(QueueKeys(QueueIdentity("000000000000", "us-east-1", "q")).script_keys()))
    assert used <= documented_key_indexes(name)
    assert max(documented_key_indexes(name)) == passed


def test_the_sweep_lease_is_the_only_script_that_is_not_per_queue() -> None:
    assert set(SERVER_SCRIPT_KEY_COUNTS) <= set(SCRIPT_NAMES)
    for name in SCRIPT_NAMES:
        if name not in SERVER_SCRIPT_KEY_COUNTS:
            assert "the same eighteen for every queue script" in script_source(name)


@pytest.mark.parametrize("name", ["add", "release_due", "receive", "change_visibility"])
def test_scripts_that_make_messages_visible_publish_only_through_the_listening_check(
    name: str,
) -> None:
    code = code_lines(name)
    assert re.search(r"^\s*announce\(", code, re.MULTILINE), f"{name} never calls announce()"
    assert code.count("'PUBLISH'") == 1  # the one inside announce(), from _common.lua
