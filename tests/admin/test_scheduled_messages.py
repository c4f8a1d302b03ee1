"""The queue page shows timer messages (#19) waiting in Cassandra: how many, and when the
earliest is due."""

from __future__ import annotations

import datetime
from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import Console, unique


def test_the_queue_page_shows_the_scheduled_count_and_the_earliest_due_time(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-timers-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    due = datetime.datetime.now(datetime.UTC).replace(microsecond=0) + datetime.timedelta(hours=5)
    for hours_later in (0, 1, 2):
        sqs.send_message(QueueUrl=url, MessageBody=f"+{hours_later}h", MessageAttributes={
            "cqs.DeliverAt": {
                "DataType": "Number",
                "StringValue": str(int(due.timestamp()) + 3600 * hours_later),
            },
        })
    page.goto(f"{console.admin}/queues/{name}")
    expect(page.locator('[data-field="scheduled"]')).to_have_text("3")
    expect(page.locator('[data-field="delayed"]')).to_have_text("0")
    expect(page.locator('[data-field="earliest_scheduled"]')).to_contain_text(
        due.strftime("%Y-%m-%d %H:%M:%S")
    )


def test_a_queue_without_timer_messages_shows_none_scheduled(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-no-timers-")
    sqs.create_queue(QueueName=name)
    page.goto(f"{console.admin}/queues/{name}")
    expect(page.locator('[data-field="scheduled"]')).to_have_text("0")
    expect(page.locator('[data-field="earliest_scheduled"]')).not_to_contain_text("UTC")
