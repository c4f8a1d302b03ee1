"""Keys and clients of the authentication wire tests: access keys of two accounts (and two
more), the credentials file that holds them, a verify server over one, and boto3 clients
(JSON or query protocol) signing with a key.

Must not import cqs: these tests see the server only through HTTP, as a user would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.wire.conftest import REGION


@dataclass(frozen=True)
class Key:
    key_id: str
    secret: str
    account_id: str


ORDERS = Key("AKIDORDERS", "orders-secret-do-not-log", "111111111111")
BILLING = Key("AKIDBILLING", "billing-secret-do-not-log", "222222222222")
AUDIT = Key("AKIDAUDIT", "audit-secret-do-not-log", "444444444444")  # a third account
LATE = Key("AKIDLATE", "late-secret-do-not-log", "333333333333")  # added by a SIGHUP test
STRANGER = Key("AKIDSTRANGER", "whatever", "999999999999")  # in no credentials file


def credentials_toml(*keys: Key) -> str:
    return "".join(
        f'[[access_keys]]\nid = "{k.key_id}"\nsecret = "{k.secret}"\n'
        f'account_id = "{k.account_id}"\n\n'
        for k in keys
    )


def start_verify_server(
    start: StartServer, redis_url: str, directory: Path, *keys: Key
) -> tuple[CqsProcess, Path]:
    path = directory / "credentials.toml"
    path.write_text(credentials_toml(*keys))
    server = start(
        [redis_url], extra_args=["--auth", "verify", "--credentials-file", str(path)]
    )
    return server, path


def client(
    sessions: dict[str, boto3.session.Session], protocol: str, endpoint: str, key: Key,
    secret: str | None = None,
) -> Any:
    sqs = sessions[protocol].client(
        "sqs", endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id=key.key_id, aws_secret_access_key=secret or key.secret,
        config=Config(retries={"total_max_attempts": 1}),
    )
    assert sqs.meta.service_model.protocol == protocol
    return sqs


def works(sqs: Any) -> bool:
    try:
        sqs.list_queues()
    except ClientError:
        return False
    return True


def eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()
