"""The scenario of scenario.py driven through a Python SQS client: botocore (boto3's client,
in-process, or an old botocore in a subprocess) or the AWS CLI (one `aws` process per call).

Owns the steps as calls of one generic `call(action, **params)`; each step returns what it
observed (binary values base64-encoded), printed or collected as one JSON object. It judges
nothing. Run as `python -m tests.clients.python_driver botocore '<plan json>'` it uses
whatever botocore is first on sys.path, so it imports nothing but the standard library at
the top (the subprocess must not pick up the suite's own botocore through an import).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Call = Callable[..., dict[str, Any]]
Emit = Callable[[dict[str, Any]], None]


class SdkError(Exception):
    """An error answer from the server, by its code as the SDK reports it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def snake(action: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


def botocore_call(client: Any) -> Call:
    """`call` over a botocore client (boto3's clients are botocore clients)."""
    from botocore.exceptions import ClientError

    def call(action: str, **params: Any) -> dict[str, Any]:
        try:
            return dict(getattr(client, snake(action))(**params))
        except ClientError as error:
            raise SdkError(error.response["Error"]["Code"], str(error)) from error

    return call


def cli_call(aws: str, endpoint: str, environment: Mapping[str, str]) -> Call:
    """`call` through the AWS CLI: `aws sqs <action> --cli-input-json <params>`."""

    def call(action: str, **params: Any) -> dict[str, Any]:
        # --no-paginate: ListQueues pages as the call asks, not all of them joined.
        command = [aws, "--endpoint-url", endpoint, "--output", "json", "--no-paginate", "sqs",
                   snake(action).replace("_", "-"), "--cli-input-json",
                   json.dumps(plain(params, blob=bytes.decode))]
        done = subprocess.run(command, capture_output=True, text=True, env=dict(environment),
                              timeout=60)
        if done.returncode != 0:
            found = re.search(r"An error occurred \(([^)]+)\)", done.stderr)
            raise SdkError(found.group(1) if found else "CLI", done.stderr.strip())
        return dict(json.loads(done.stdout)) if done.stdout.strip() else {}

    return call


def base64_text(value: bytes) -> str:
    return base64.b64encode(value).decode()


def plain(value: Any, blob: Callable[[bytes], str] = base64_text) -> Any:
    """JSON-ready: bytes become base64 text (as SDKs that return text give them), or `blob`."""
    if isinstance(value, bytes):
        return blob(value)
    if isinstance(value, Mapping):
        return {k: plain(v, blob) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, blob) for v in value]
    return value


def attributes_to_send(plan: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: {**value, "BinaryValue": base64.b64decode(value["BinaryValue"])}
        if "BinaryValue" in value else dict(value)
        for name, value in plan["attributes"].items()
    }


class Scenario:
    """The steps, in order, over one `call`; `state` carries queue URLs and handles on."""

    def __init__(self, call: Call, plan: Mapping[str, Any]) -> None:
        self.call = call
        self.plan = plan
        self.standard = ""
        self.fifo = ""
        self.handles: list[str] = []

    def receive(self, url: str, **options: Any) -> list[dict[str, Any]]:
        return list(self.call("ReceiveMessage", QueueUrl=url, **options).get("Messages", []))

    def counts(self, url: str) -> list[int]:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        got = self.call("GetQueueAttributes", QueueUrl=url, AttributeNames=names)["Attributes"]
        return [int(got[name]) for name in names]

    def create(self) -> dict[str, Any]:
        self.standard = self.call("CreateQueue", QueueName=self.plan["standard"])["QueueUrl"]
        self.fifo = self.call("CreateQueue", QueueName=self.plan["fifo"], Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        fifo_attributes = self.call("GetQueueAttributes", QueueUrl=self.fifo,
                                    AttributeNames=["All"])["Attributes"]
        return {"standard_url": self.standard, "fifo_url": self.fifo,
                "fifo_attributes": fifo_attributes}

    def send(self) -> dict[str, Any]:
        sent = self.call("SendMessage", QueueUrl=self.standard, MessageBody=self.plan["body"],
                         MessageAttributes=attributes_to_send(self.plan))
        [message] = self.receive(self.standard, MessageAttributeNames=["All"],
                                 WaitTimeSeconds=2, MaxNumberOfMessages=1)
        self.handles = [message["ReceiptHandle"]]
        return {"message_id": sent["MessageId"], "md5_body": sent["MD5OfMessageBody"],
                "md5_attributes": sent.get("MD5OfMessageAttributes"),
                "received": {"message_id": message["MessageId"], "body": message["Body"],
                             "md5_body": message["MD5OfBody"],
                             "md5_attributes": message.get("MD5OfMessageAttributes"),
                             "attributes": plain(message.get("MessageAttributes", {}))}}

    def delete(self) -> dict[str, Any]:
        self.call("DeleteMessage", QueueUrl=self.standard, ReceiptHandle=self.handles[0])
        return {"counts_after": self.counts(self.standard)}

    def send_batch(self) -> dict[str, Any]:
        sent: list[dict[str, Any]] = []
        failed: list[Any] = []
        for batch in range(self.plan["batches"]):
            bodies = {f"e{n}": f"m-{batch}-{n}" for n in range(10)}
            answer = self.call("SendMessageBatch", QueueUrl=self.standard, Entries=[
                {"Id": entry_id, "MessageBody": body} for entry_id, body in bodies.items()])
            sent += [{"id": entry["Id"], "body": bodies[entry["Id"]],
                      "message_id": entry["MessageId"], "md5_body": entry["MD5OfMessageBody"]}
                     for entry in answer.get("Successful", [])]
            failed += answer.get("Failed", [])
        return {"sent": sent, "failed": failed}

    def receive_all(self) -> dict[str, Any]:
        expected, received, empty = 10 * self.plan["batches"], [], 0
        self.handles = []
        while len(received) < expected and empty < 3:
            messages = self.receive(self.standard, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                    VisibilityTimeout=300)
            empty = 0 if messages else empty + 1
            received += [[m["MessageId"], m["Body"]] for m in messages]
            self.handles += [m["ReceiptHandle"] for m in messages]
        return {"received": received}

    def delete_batch(self) -> dict[str, Any]:
        deleted, failed = 0, []
        for start in range(0, len(self.handles), 10):
            chunk = self.handles[start:start + 10]
            answer = self.call("DeleteMessageBatch", QueueUrl=self.standard, Entries=[
                {"Id": f"d{n}", "ReceiptHandle": handle} for n, handle in enumerate(chunk)])
            deleted += len(answer.get("Successful", []))
            failed += answer.get("Failed", [])
        after = self.receive(self.standard, WaitTimeSeconds=1)
        return {"deleted": deleted, "failed": failed, "counts_after": self.counts(self.standard),
                "received_after": len(after)}

    def long_poll(self) -> dict[str, Any]:
        """Wall clock: a send during a real WaitTimeSeconds, as every SDK's driver does it."""

        def send_later() -> None:
            time.sleep(self.plan["long_poll_send_after"])
            self.call("SendMessage", QueueUrl=self.standard, MessageBody="during the wait")

        sender = threading.Thread(target=send_later)
        started = time.monotonic()
        sender.start()
        messages = self.receive(self.standard, WaitTimeSeconds=self.plan["long_poll_wait"])
        elapsed = time.monotonic() - started
        sender.join()
        for message in messages:
            self.call("DeleteMessage", QueueUrl=self.standard,
                      ReceiptHandle=message["ReceiptHandle"])
        return {"elapsed": elapsed, "bodies": [m["Body"] for m in messages]}

    def change_visibility(self) -> dict[str, Any]:
        """Wall clock: the client servers run on real time; 2 s outlast a 1 s visibility."""
        # A queue of its own, so what earlier steps left behind cannot be received here.
        url = self.call("CreateQueue", QueueName=self.plan["visibility_queue"])["QueueUrl"]
        self.call("SendMessage", QueueUrl=url, MessageBody="comes back")
        first = self.receive(url, WaitTimeSeconds=2, VisibilityTimeout=30)
        self.call("ChangeMessageVisibility", QueueUrl=url,
                  ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
        again = self.receive(url, WaitTimeSeconds=5, VisibilityTimeout=1)
        # May arrive after that 1 s on a slow machine: as in SQS it still applies.
        self.call("ChangeMessageVisibility", QueueUrl=url,
                  ReceiptHandle=again[0]["ReceiptHandle"], VisibilityTimeout=30)
        time.sleep(2)  # past the receive's own 1 s visibility, on the server's real clock
        hidden = self.receive(url, WaitTimeSeconds=1)
        self.call("DeleteQueue", QueueUrl=url)
        return {"first": [m["Body"] for m in first], "reappeared": [m["Body"] for m in again],
                "while_hidden": [m["Body"] for m in hidden]}

    def fifo_order(self) -> dict[str, Any]:
        groups: dict[str, int] = self.plan["fifo_groups"]
        sent = []
        for n in range(max(groups.values())):
            for group, count in groups.items():
                if n < count:
                    answer = self.call("SendMessage", QueueUrl=self.fifo,
                                       MessageBody=f"{group}-{n}", MessageGroupId=group)
                    sent.append([group, f"{group}-{n}", answer["SequenceNumber"]])
        received: list[list[str]] = []
        empty = 0
        while len(received) < len(sent) and empty < 3:
            messages = self.receive(self.fifo, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                    AttributeNames=["MessageGroupId"])
            empty = 0 if messages else empty + 1
            for message in messages:
                received.append([message["Attributes"]["MessageGroupId"], message["Body"]])
                self.call("DeleteMessage", QueueUrl=self.fifo,
                          ReceiptHandle=message["ReceiptHandle"])
        return {"sent": sent, "received": received}

    def attributes(self) -> dict[str, Any]:
        self.call("SetQueueAttributes", QueueUrl=self.standard,
                  Attributes=self.plan["set_attributes"])
        got = self.call("GetQueueAttributes", QueueUrl=self.standard, AttributeNames=["All"])
        return {"got": got["Attributes"]}

    def tags(self) -> dict[str, Any]:
        self.call("TagQueue", QueueUrl=self.standard, Tags=self.plan["tags"])
        after_tag = self.call("ListQueueTags", QueueUrl=self.standard).get("Tags", {})
        self.call("UntagQueue", QueueUrl=self.standard, TagKeys=self.plan["untag"])
        after_untag = self.call("ListQueueTags", QueueUrl=self.standard).get("Tags", {})
        return {"after_tag": after_tag, "after_untag": after_untag}

    def list_paging(self) -> dict[str, Any]:
        names = [f"{self.plan['listed_prefix']}{n}" for n in range(self.plan["listed_queues"])]
        urls = [self.call("CreateQueue", QueueName=name)["QueueUrl"] for name in names]
        pages: list[list[str]] = []
        token: str | None = None
        while len(pages) < 50:
            more = {"NextToken": token} if token else {}
            answer = self.call("ListQueues", QueueNamePrefix=self.plan["listed_prefix"],
                               MaxResults=self.plan["page_size"], **more)
            pages.append(list(answer.get("QueueUrls", [])))
            token = answer.get("NextToken")
            if not token:
                break
        for url in urls:
            self.call("DeleteQueue", QueueUrl=url)
        return {"pages": pages}

    def purge(self) -> dict[str, Any]:
        url = self.call("CreateQueue", QueueName=self.plan["purge_queue"])["QueueUrl"]
        for n in range(self.plan["purged_messages"]):
            self.call("SendMessage", QueueUrl=url, MessageBody=f"purged-{n}")
        before = self.counts(url)
        self.call("PurgeQueue", QueueUrl=url)
        after = self.counts(url)
        received = self.receive(url, WaitTimeSeconds=1)
        self.call("DeleteQueue", QueueUrl=url)
        return {"counts_before": before, "counts_after": after, "received_after": len(received)}

    def delete_queue(self) -> dict[str, Any]:
        self.call("DeleteQueue", QueueUrl=self.standard)
        self.call("DeleteQueue", QueueUrl=self.fifo)
        code = None
        try:
            self.call("GetQueueUrl", QueueName=self.plan["standard"])
        except SdkError as error:
            code = error.code
        listed = self.call("ListQueues", QueueNamePrefix=self.plan["prefix"])
        return {"error_code": code, "listed_after": listed.get("QueueUrls", [])}

    def steps(self) -> Sequence[tuple[str, Callable[[], dict[str, Any]]]]:
        return [("create", self.create), ("send", self.send), ("delete", self.delete),
                ("send_batch", self.send_batch), ("receive_all", self.receive_all),
                ("delete_batch", self.delete_batch), ("long_poll", self.long_poll),
                ("change_visibility", self.change_visibility), ("fifo", self.fifo_order),
                ("attributes", self.attributes), ("tags", self.tags),
                ("list_paging", self.list_paging), ("purge", self.purge),
                ("delete_queue", self.delete_queue)]


def run(call: Call, plan: Mapping[str, Any], emit: Emit) -> None:
    """Every step in order; a step that fails is reported as such and the next one runs."""
    for name, step in Scenario(call, plan).steps():
        try:
            emit({"step": name, **plain(step())})
        except Exception as error:  # reported to the test, which fails the step
            emit({"step": name, "error": f"{type(error).__name__}: {error}"})


def main() -> None:
    """`botocore '<plan>'`: the scenario over the first botocore on sys.path, as JSON lines."""
    import botocore
    import botocore.session
    from botocore.config import Config

    plan = json.loads(sys.argv[2])
    client = botocore.session.get_session().create_client(
        "sqs", endpoint_url=plan["endpoint"], region_name=plan["region"],
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40))
    print(json.dumps({"step": "client", "version": botocore.__version__,
                      "protocol": client.meta.service_model.protocol}), flush=True)
    run(botocore_call(client), plan, lambda record: print(json.dumps(record), flush=True))


if __name__ == "__main__":
    main()
