"""`cqs serve` on a non-loopback address with no auth mode chosen refuses to start, as
Redis's protected mode does; the container image (which listens on 0.0.0.0) with it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cqs.operations.authentication import credential_store
from cqs.settings import load_settings
from cqs.sqs_api.credentials import CredentialsError

ROOT = Path(__file__).parents[2]


def image_environment() -> dict[str, str]:
    """The CQS_* variables the Dockerfile's ENV lines set."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            found.update(re.findall(r"(CQS_\w+)=(\S+)", line))
    return found


def test_the_container_image_refuses_to_start_without_an_auth_choice() -> None:
    environment = image_environment()
    assert environment["CQS_HOST"] == "0.0.0.0"

    with pytest.raises(CredentialsError, match=r"listening on 0\.0\.0\.0 with no auth mode chosen"):
        credential_store(load_settings([], environ=environment))


def test_the_container_image_starts_with_auth_off_given_explicitly() -> None:
    settings = load_settings([], environ={**image_environment(), "CQS_AUTH": "off"})

    credential_store(settings)  # no refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_a_loopback_server_needs_no_auth_choice(host: str) -> None:
    credential_store(load_settings([], environ={"CQS_HOST": host}))


def test_serve_on_every_interface_without_an_auth_choice_exits_before_starting_anything(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    result = subprocess.run(
        # Backends named (on a port nothing listens on), so that nothing embedded would
        # start even without the refusal.
        [sys.executable, "-m", "cqs", "serve", "--host", "0.0.0.0", "--data-dir", "data",
         "--redis-urls", "redis://127.0.0.1:9/0", "--cassandra-hosts", "127.0.0.1:9"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "CQS_AUTH=off" in result.stderr and "CQS_AUTH=verify" in result.stderr
    assert not (tmp_path / "data").exists(), "nothing is started"
