"""`cqs groups list|create|set-filter|delete`: manage a queue's consumer groups on a running server.

Owns the subcommand's flags and its calls: each is one `CqsExtensions.<Action>` request on
the JSON protocol, signed with SigV4 using the credentials botocore finds (environment,
profile; dummy ones when none are set, fine with `--auth off`). The endpoint is the queue
URL's scheme and host unless `--endpoint-url` says otherwise. Prints the answer as JSON.
Imports botocore and the standard library only; never the service or an adapter.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"


def add_parser(commands: Any) -> None:
    """Add `groups` and its four actions to the CLI's subcommands."""
    parser = commands.add_parser(
        "groups", help="list, create, change the filter of or delete a queue's consumer groups"
    )
    actions = parser.add_subparsers(dest="groups_action", required=True)
    listing = actions.add_parser("list", help="the queue's groups, their URLs and attributes")
    create = actions.add_parser("create", help="add a consumer group to a standard queue")
    set_filter = actions.add_parser(
        "set-filter", help="change a group's filter policy for later sends (\"\" removes it)"
    )
    delete = actions.add_parser("delete", help="delete a consumer group and its messages")
    for action in (listing, create, set_filter, delete):
        action.add_argument("--queue-url", required=True, help="the queue's URL")
        action.add_argument("--endpoint-url", help="default: the queue URL's scheme and host")
        action.add_argument("--region", default=None, help="signing region (default: botocore's)")
    for action in (create, set_filter, delete):
        action.add_argument("--name", required=True, help="the group's name")
    set_filter.add_argument(
        "--filter-policy", required=True, help='SNS filter-policy JSON; "" removes the filter'
    )
    create.add_argument("--filter-policy", help="SNS filter-policy JSON on message attributes")
    create.add_argument("--visibility-timeout", help="seconds (default: the queue's)")
    create.add_argument("--redrive-policy", help="RedrivePolicy JSON: the group's own DLQ")
    create.add_argument("--start-at", help='"now" (default), epoch seconds or an ISO 8601 time')
    create.add_argument(
        "--consumed-retention-seconds",
        help="keep what the group consumes this long, for replay (default: the queue's)",
    )


def run(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"QueueUrl": args.queue_url}
    if args.groups_action in ("create", "set-filter", "delete"):
        body["GroupName"] = args.name
    if args.groups_action == "set-filter":
        body["Attributes"] = {"FilterPolicy": args.filter_policy}
    if args.groups_action == "create":
        attributes = {
            "FilterPolicy": args.filter_policy, "VisibilityTimeout": args.visibility_timeout,
            "RedrivePolicy": args.redrive_policy, "StartAt": args.start_at,
            "cqs.ConsumedRetentionSeconds": args.consumed_retention_seconds,
        }
        body["Attributes"] = {k: v for k, v in attributes.items() if v is not None}
    action = {
        "list": "ListConsumerGroups", "create": "CreateConsumerGroup",
        "set-filter": "SetConsumerGroupAttributes", "delete": "DeleteConsumerGroup",
    }[args.groups_action]
    endpoint = args.endpoint_url or _endpoint_of(args.queue_url)
    try:
        answer = call(endpoint, action, body, region=args.region)
    except GroupsCallError as error:
        print(f"cqs groups {args.groups_action}: {error}", file=sys.stderr)
        return 1
    if answer:
        print(json.dumps(answer, indent=2, sort_keys=True))
    return 0


class GroupsCallError(Exception):
    """The server refused the call (its error code and message) or could not be reached."""


def call(endpoint: str, action: str, body: dict[str, Any], *, region: str | None = None
         ) -> dict[str, Any]:
    session = botocore.session.get_session()
    found = session.get_credentials()
    credentials = found.get_frozen_credentials() if found is not None else None
    signing = Credentials(
        credentials.access_key if credentials else "x",
        credentials.secret_key if credentials else "x",
        credentials.token if credentials else None,
    )
    request = AWSRequest(
        method="POST", url=endpoint.rstrip("/") + "/", data=json.dumps(body).encode(),
        headers={"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": f"CqsExtensions.{action}"},
    )
    region_name = region or session.get_config_variable("region") or "us-east-1"
    SigV4Auth(signing, "sqs", region_name).add_auth(request)
    prepared = urllib.request.Request(
        request.url, data=request.body, headers=dict(request.headers.items()), method="POST"
    )
    try:
        with urllib.request.urlopen(prepared, timeout=30) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        raise GroupsCallError(
            _error_text(error.read(), error.code, error.headers.get("x-amzn-query-error"))
        ) from None
    except OSError as error:
        raise GroupsCallError(f"cannot reach {endpoint}: {error}") from None
    return dict(json.loads(text)) if text.strip() else {}


def _error_text(payload: bytes, status: int, query_error: str | None = None) -> str:
    """The error as SQS clients name it: the query code of `x-amzn-query-error` (what boto3
    shows as Error.Code), else the `__type` shape name."""
    try:
        document = json.loads(payload)
        code = str(document.get("__type", "")).rsplit("#", 1)[-1]
        if query_error and query_error.split(";", 1)[0]:
            code = query_error.split(";", 1)[0]
        return f"{code} ({status}): {document.get('message', '')}"
    except (ValueError, AttributeError):
        return f"HTTP {status}: {payload[:200]!r}"


def _endpoint_of(queue_url: str) -> str:
    parts = urlsplit(queue_url)
    if not parts.scheme or not parts.netloc:
        raise SystemExit("cqs groups: --queue-url must be a full URL, or give --endpoint-url")
    return f"{parts.scheme}://{parts.netloc}"
