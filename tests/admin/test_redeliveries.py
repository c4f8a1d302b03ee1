"""The queue page shows why messages were delivered again (issue 13's redelivery counters)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import Console, unique


def test_a_message_received_again_after_its_visibility_timeout_is_counted_by_reason(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-redeliver-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="again")
    # A visibility timeout of 0 leaves the message visible: the second receive repeats it.
    for expected_count in ("1", "2", "3"):
        [message] = sqs.receive_message(
            QueueUrl=url, VisibilityTimeout=0, WaitTimeSeconds=1,
            AttributeNames=["ApproximateReceiveCount"],
        )["Messages"]
        assert message["Attributes"]["ApproximateReceiveCount"] == expected_count
    page.goto(f"{console.admin}/queues/{name}")
    figures = page.locator("[data-redeliveries]")
    expect(figures.locator('[data-field="redelivered_visibility_timeout"]')).to_have_text("2")
    expect(figures.locator('[data-field="redelivered_store_fallback"]')).to_have_text("0")
    expect(figures.locator('[data-field="redelivered_refill"]')).to_have_text("0")
