"""`cqs serve` on a machine without redis-server, Java or the embedded Cassandra's jars: one line
saying what is missing and how to get it, a non-zero exit, no traceback, nothing started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cqs.operations.embedded import missing_requirements
from cqs.settings import Settings, load_settings

ROOT = Path(__file__).parents[2]


def serve_with_empty_path(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """`python -m cqs serve` with a PATH of one empty directory (the interpreter is named
    by its full path, so it needs nothing from PATH)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    env.update(PATH=str(empty), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "cqs", "serve", "--data-dir", "data", *flags],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )


def test_serve_without_redis_server_and_java_says_so_in_one_line_and_exits_non_zero(
    tmp_path: Path,
) -> None:
    result = serve_with_empty_path(tmp_path)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "cqs serve: redis-server and java were not found on PATH; install them"
        " (Debian: apt-get install redis-server openjdk-17-jre-headless)"
        " or give --redis-urls and --cassandra-hosts"
    ]
    assert not (tmp_path / "data").exists(), "nothing is started when something is missing"


def test_serve_with_redis_urls_but_without_java_names_only_java(tmp_path: Path) -> None:
    result = serve_with_empty_path(tmp_path, "--redis-urls", "redis://127.0.0.1:1/0")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "cqs serve: java was not found on PATH; install it"
        " (Debian: apt-get install openjdk-17-jre-headless) or give --cassandra-hosts"
    ]


def test_missing_redis_server_alone_is_one_sentence_with_the_flag_to_give_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    settings = Settings(cassandra_hosts=("127.0.0.1:9042",))

    assert missing_requirements(settings) == (
        "redis-server was not found on PATH; install it"
        " (Debian: apt-get install redis-server) or give --redis-urls"
    )


def test_the_retired_embedded_cassandra_1_2_is_refused_with_the_versions_there_are() -> None:
    with pytest.raises(ValueError, match=r"embedded_cassandra_version must be one of 5\.0, not '1\.2'"):
        load_settings(environ={"CQS_EMBEDDED_CASSANDRA_VERSION": "1.2"})


def test_without_the_cassandra_5_jars_the_command_that_fetches_them_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CQS_CASSANDRA_HOME", str(tmp_path / "no-cassandra-here"))
    settings = Settings(redis_urls=("redis://r:6379/0",))

    assert missing_requirements(settings) == (
        "java was not found on PATH and the embedded Cassandra 5.0's jars are not installed;"
        " install them (Debian: apt-get install openjdk-17-jre-headless; cqs cassandra install)"
        " or give --cassandra-hosts"
    )


def test_nothing_is_missing_when_both_services_are_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    settings = Settings(redis_urls=("redis://r:6379/0",), cassandra_hosts=("c:9042",))

    assert missing_requirements(settings) is None
