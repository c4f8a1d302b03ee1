"""The README's three lines that turn authentication on, run as written: the credentials file
they write is accepted, its key signs requests, and an unsigned request is refused.

The third line's `./scripts/serve` starts embedded Redis and Cassandra; here its arguments
go to a server over the suite's own Redis and Cassandra instead. Must not import cqs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fixtures.cqs_server import StartServer
from tests.wire.conftest import REGION, send_json, unique_name

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_auth_lines() -> list[str]:
    section = README.read_text().split("### Turning authentication on", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README's auth section has no sh block"
    return block.group(1).strip().splitlines()


def test_the_readmes_three_lines_turn_signature_checks_on(
    redis_server: Any, start_cqs_server: StartServer, tmp_path: Path
) -> None:
    lines = readme_auth_lines()
    assert len(lines) == 3 and lines[2].startswith("./scripts/serve ")
    subprocess.run(["bash", "-euc", "\n".join(lines[:2])], cwd=tmp_path, check=True)
    arguments = [str(tmp_path / arg) if arg.endswith(".toml") else arg
                 for arg in shlex.split(lines[2])[1:]]
    server = start_cqs_server([redis_server.url], extra_args=arguments)
    key_id = re.search(r'id = "([^"\\]+)"', lines[0])
    secret = re.search(r'secret = "([^"\\]+)"', lines[0])
    account = re.search(r'account_id = "(\d{12})', lines[0])
    assert key_id and secret and account
    sqs = boto3.client("sqs", endpoint_url=server.url, region_name=REGION,
                       aws_access_key_id=key_id.group(1), aws_secret_access_key=secret.group(1),
                       config=Config(retries={"total_max_attempts": 1}))

    url = sqs.create_queue(QueueName=unique_name("readme-"))["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="signed")
    received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    unsigned = send_json(server.url, "ListQueues", {})
    with pytest.raises(ClientError) as wrong:
        boto3.client("sqs", endpoint_url=server.url, region_name=REGION,
                     aws_access_key_id=key_id.group(1), aws_secret_access_key="not-it",
                     config=Config(retries={"total_max_attempts": 1})).list_queues()

    assert f"/{account.group(1)}/" in url
    assert [m["Body"] for m in received] == ["signed"]
    assert unsigned.status == 403 and unsigned.code_boto3_shows == "MissingAuthenticationToken"
    assert wrong.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert (tmp_path / "credentials.toml").stat().st_mode & 0o077 == 0
