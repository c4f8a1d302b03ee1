"""FIFO queues in the console: created from the form, badged, sent to with a message group
(the API's own refusal when the group is missing), and their messages' FIFO fields shown."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import Console, unique


def test_a_fifo_queue_is_created_and_sent_to_with_a_group_id(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-fifo-") + ".fifo"
    page.goto(console.admin + "/new-queue")
    page.get_by_label("Name").fill(name)
    page.get_by_label("FIFO (first in, first out, exactly once)").check()
    page.get_by_label("Content-based deduplication (FIFO only)").check()
    page.get_by_role("button", name="Create queue").click()
    expect(page).to_have_url(f"{console.admin}/queues/{name}")
    expect(page.get_by_role("heading", level=1).locator(".badge-fifo")).to_have_text("FIFO")
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["FifoQueue"] == "true"
    assert attributes["ContentBasedDeduplication"] == "true"

    page.get_by_role("link", name="Send a message").click()
    page.get_by_label("Body").fill("first of group g1")
    page.get_by_role("button", name="Send message").click()
    expect(page.get_by_role("alert")).to_contain_text("MessageGroupId")  # the API refuses

    page.get_by_label("Message group id").fill("g1")
    page.get_by_role("button", name="Send message").click()
    expect(page.get_by_role("status")).to_contain_text(" sent.")
    page.get_by_label("Body").fill("second of group g1")
    page.get_by_label("Message group id").fill("g1")
    page.get_by_label("Deduplication id").fill("explicit-2")
    page.get_by_role("button", name="Send message").click()
    expect(page.get_by_role("status")).to_contain_text(" sent.")

    page.goto(f"{console.admin}/queues/{name}/messages")
    rows = page.locator("tr[data-message]")
    expect(rows).to_have_count(2)
    rows.filter(has_text="second of group g1").get_by_role("link").click()
    system = page.locator("[data-system-attributes]")
    expect(system.locator("tr", has_text="MessageGroupId")).to_contain_text("g1")
    expect(system.locator("tr", has_text="MessageDeduplicationId")).to_contain_text("explicit-2")
    expect(system.locator("tr", has_text="SequenceNumber")).to_be_visible()

    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in received] == ["first of group g1", "second of group g1"]
