"""Sending test messages, watching the counts change live, and peeking at messages without
consuming them (checked afterwards with an ordinary ReceiveMessage)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import LIVE_SECONDS, Console, screenshot, unique


def test_a_message_sent_from_the_form_shows_in_the_counts_without_a_reload(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    watcher = page.context.new_page()
    try:
        watcher.goto(f"{console.admin}/?prefix={name}")
        row = watcher.locator(f'tr[data-name="{name}"]')
        expect(row.locator('[data-field="visible"]')).to_have_text("0")
        watcher.evaluate("window.notReloaded = true")

        page.goto(f"{console.admin}/queues/{name}/send")
        page.get_by_label("Body").fill('{"hello": "console"}')
        page.get_by_label("Name of attribute 1").fill("kind")
        page.get_by_label("Value of attribute 1").fill("greeting")
        page.get_by_label("Name of attribute 2").fill("size")
        page.get_by_label("Type of attribute 2").select_option("Number")
        page.get_by_label("Value of attribute 2").fill("42")
        page.get_by_role("button", name="Send message").click()
        expect(page.get_by_role("status")).to_contain_text(" sent.")

        expect(row.locator('[data-field="visible"]')).to_have_text("1", timeout=LIVE_SECONDS * 1000)
        assert watcher.evaluate("window.notReloaded") is True
    finally:
        watcher.close()

    received = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert received[0]["Body"] == '{"hello": "console"}'
    assert received[0]["MessageAttributes"] == {
        "kind": {"DataType": "String", "StringValue": "greeting"},
        "size": {"DataType": "Number", "StringValue": "42"},
    }


def test_the_send_form_shows_the_api_s_refusal(page: Page, console: Console, sqs: Any) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    page.goto(f"{console.admin}/queues/{name}/send")
    page.get_by_label("Body").fill("late")
    page.get_by_label("Delay (seconds)").fill("901")
    page.get_by_role("button", name="Send message").click()
    expect(page.get_by_role("alert")).to_contain_text("InvalidParameterValue")
    expect(page.get_by_label("Body")).to_have_value("late")
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "0"


def test_the_queue_page_follows_sends_and_receives_live(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    page.goto(f"{console.admin}/queues/{name}")
    expect(page.locator('[data-field="visible"]')).to_have_text("0")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
    )
    expect(page.locator('[data-field="visible"]')).to_have_text("3", timeout=LIVE_SECONDS * 1000)
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=600)
    expect(page.locator('[data-field="in_flight"]')).to_have_text(
        "2", timeout=LIVE_SECONDS * 1000
    )
    expect(page.locator('[data-field="visible"]')).to_have_text("1")


def test_peeking_shows_a_message_without_receiving_it(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sent = sqs.send_message(
        QueueUrl=url, MessageBody='{"order": 7, "note": "<b>not markup</b>"}',
        MessageAttributes={"source": {"DataType": "String", "StringValue": "web"}},
    )["MessageId"]

    page.goto(f"{console.admin}/queues/{name}/messages")
    row = page.locator(f'tr[data-message="{sent}"]')
    expect(row).to_contain_text("visible")
    expect(row.locator("td.num").first).to_have_text("0")  # receives
    page.reload()  # a second peek changes nothing either
    expect(row).to_contain_text('{"order": 7, "note": "<b>not markup</b>"}')

    row.get_by_role("link", name=sent).click()
    expect(page).to_have_url(f"{console.admin}/queues/{name}/messages/{sent}")
    expect(page.locator("[data-message-body]")).to_have_text(
        '{"order": 7, "note": "<b>not markup</b>"}'
    )
    expect(page.locator("[data-message-attributes]")).to_contain_text("source")
    expect(page.locator("[data-message-attributes]")).to_contain_text("web")
    system = page.locator("[data-system-attributes]")
    expect(system).to_contain_text("ApproximateReceiveCount")
    expect(system.locator("tr", has_text="ApproximateReceiveCount")).to_contain_text("0")
    expect(system.locator("tr", has_text="SentTimestamp")).to_be_visible()

    received = sqs.receive_message(
        QueueUrl=url, AttributeNames=["ApproximateReceiveCount"], WaitTimeSeconds=1
    )["Messages"]
    assert [m["MessageId"] for m in received] == [sent]
    assert received[0]["Attributes"]["ApproximateReceiveCount"] == "1"

    page.reload()
    expect(page.locator("[data-message-state]")).to_have_text("in flight")
    expect(system.locator("tr", has_text="ApproximateReceiveCount")).to_contain_text("1")


def test_the_message_browser_pages_through_every_message(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sent: set[str] = set()
    for batch in range(3):
        entries = [
            {"Id": str(i), "MessageBody": f"message {batch}-{i}"} for i in range(10)
        ][: 10 if batch < 2 else 5]
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        sent.update(entry["MessageId"] for entry in answer["Successful"])
    assert len(sent) == 25

    page.goto(f"{console.admin}/queues/{name}/messages")
    page.get_by_label("Per page").select_option("10")
    page.get_by_role("button", name="Show").click()
    seen: list[str] = []
    pager = page.get_by_role("navigation", name="Pages")
    for number in (1, 2, 3):
        expect(pager).to_contain_text(f"Page {number}")
        ids = page.locator("tr[data-message]").evaluate_all(
            "rows => rows.map(row => row.dataset.message)"
        )
        seen.extend(ids)
        if number < 3:
            assert len(ids) == 10
            pager.get_by_role("link", name="Next page").click()
    assert len(seen) == 25 and set(seen) == sent
    next_links = pager.get_by_role("link", name="Next page")
    if next_links.count():  # the last full page may still offer one: it must be empty
        next_links.click()
        expect(page.locator("tr[data-message]")).to_have_count(0)
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "25"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_the_screens_of_a_busy_queue(
    page: Page, console: Console, showcase: dict[str, str]
) -> None:
    page.goto(f"{console.admin}/queues/shop-orders")
    expect(page.locator('[data-field="in_flight"]')).to_have_text("3")
    expect(page.locator('[data-field="visible"]')).to_have_text("9")
    screenshot(page, "queue")
    page.goto(f"{console.admin}/queues/shop-orders/messages")
    expect(page.locator("tr[data-message]")).to_have_count(12)
    screenshot(page, "messages")
    page.locator("tr[data-message] a").first.click()
    expect(page.locator("[data-message-body]")).to_contain_text('"order"')
    screenshot(page, "message")


def test_the_charts_draw_the_sampled_history(
    page: Page, console: Console, showcase: dict[str, str]
) -> None:
    page.goto(f"{console.admin}/queues/shop-emails")
    # The first sample of a queue comes within one sampling interval (10 s) of its creation.
    page.wait_for_function(
        "() => Number(document.querySelector('[data-chart=\"depth\"]')"
        ".getAttribute('data-points')) > 0",
        timeout=LIVE_SECONDS * 1000,
    )
    depth = page.locator('[data-chart="depth"] polyline.line-visible')
    expect(depth.first).to_be_attached()
