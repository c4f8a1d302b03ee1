"""Moving messages out of a dead-letter queue from the console: start, progress, cancel."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import LIVE_SECONDS, Console, unique


def test_a_move_task_is_started_shows_progress_and_is_cancelled(
    page: Page, console: Console, sqs: Any
) -> None:
    prefix = unique("adm-move-")
    dlq_url = sqs.create_queue(QueueName=prefix + "-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    source_url = sqs.create_queue(
        QueueName=prefix + "-src",
        Attributes={"RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"}
        )},
    )["QueueUrl"]
    for batch in range(3):
        sqs.send_message_batch(QueueUrl=dlq_url, Entries=[
            {"Id": str(i), "MessageBody": f"dead {batch}-{i}"} for i in range(10)
        ])

    page.goto(f"{console.admin}/queues/{prefix}-dlq")
    # The console lists queue names at most every 2 s: one listed just before our queues
    # were created through the API lacks them until the next listing.
    source_option = page.locator("#move-destination option", has_text=prefix + "-src")
    for _ in range(10):
        if source_option.count():
            break
        page.wait_for_timeout(500)
        page.reload()
    page.get_by_label("Destination").select_option(prefix + "-src")
    page.get_by_label("Messages per second").fill("2")
    page.get_by_role("button", name="Start moving").click()
    expect(page.get_by_role("status")).to_have_text("Message move task started.")
    task = page.locator("tbody[data-tasks] tr").first
    expect(task.locator('[data-field="status"]')).to_have_text("RUNNING")
    # Progress arrives through the live refresh, without reloading the page.
    page.evaluate("window.notReloaded = true")
    expect(task.locator('[data-field="moved"]')).to_have_text(
        re.compile(r"^([1-9]\d*) of 30$"), timeout=LIVE_SECONDS * 1000
    )
    assert page.evaluate("window.notReloaded") is True

    task.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("status")).to_have_text("Cancelling the message move task.")
    status = page.locator("tbody[data-tasks] tr").first.locator('[data-field="status"]')
    expect(status).to_have_text("CANCELLED", timeout=LIVE_SECONDS * 1000)
    tasks = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=10)["Results"]
    assert tasks[0]["Status"] == "CANCELLED"
    moved = int(tasks[0]["ApproximateNumberOfMessagesMoved"])
    assert 1 <= moved < 30
    source = sqs.get_queue_attributes(QueueUrl=source_url, AttributeNames=["All"])["Attributes"]
    assert int(source["ApproximateNumberOfMessages"]) == moved
