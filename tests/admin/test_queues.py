"""The queue list and the queue's own page: create, attributes, tags, dead-letter links,
purge and delete, each checked afterwards through the SQS API."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError
from playwright.sync_api import Page, expect

from tests.admin.conftest import LIVE_SECONDS, SHOWCASE_PREFIX, Console, screenshot, unique


def attributes_of(sqs: Any, name: str) -> dict[str, str]:
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"])


def test_a_standard_queue_is_created_from_the_form(page: Page, console: Console, sqs: Any) -> None:
    name = unique()
    page.goto(console.admin + "/")
    page.get_by_role("link", name="Create queue").first.click()
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create queue").click()
    expect(page).to_have_url(f"{console.admin}/queues/{name}")
    expect(page.get_by_role("status")).to_have_text(f"Queue {name} created.")
    attributes = attributes_of(sqs, name)
    assert attributes["VisibilityTimeout"] == "30"  # the SQS defaults
    assert "FifoQueue" not in attributes


def test_a_queue_is_created_with_attributes_tags_and_a_dead_letter_queue(
    page: Page, console: Console, sqs: Any
) -> None:
    dead_letters = unique("adm-dlq-")
    sqs.create_queue(QueueName=dead_letters)
    name = unique()
    page.goto(console.admin + "/new-queue")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Visibility timeout (seconds)").fill("45")
    page.get_by_label("Delivery delay (seconds)").fill("3")
    page.get_by_label("Retention period (seconds)").fill("7200")
    page.get_by_label("Send dead letters to").select_option(dead_letters)
    page.get_by_label("After this many receives").fill("4")
    page.get_by_label("Tags").fill("team=payments\nenv=test")
    page.get_by_role("button", name="Create queue").click()
    expect(page).to_have_url(f"{console.admin}/queues/{name}")
    attributes = attributes_of(sqs, name)
    assert attributes["VisibilityTimeout"] == "45"
    assert attributes["DelaySeconds"] == "3"
    assert attributes["MessageRetentionPeriod"] == "7200"
    policy = json.loads(attributes["RedrivePolicy"])
    assert policy["deadLetterTargetArn"].endswith(":" + dead_letters)
    assert int(policy["maxReceiveCount"]) == 4
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "payments", "env": "test"}


def test_the_create_form_shows_the_api_s_refusal_and_keeps_what_was_typed(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    page.goto(console.admin + "/new-queue")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Visibility timeout (seconds)").fill("99999")
    page.get_by_role("button", name="Create queue").click()
    expect(page.get_by_role("alert")).to_contain_text("InvalidAttributeValue")
    expect(page.get_by_label("Visibility timeout (seconds)")).to_have_value("99999")
    expect(page.get_by_label("Name")).to_have_value(name)
    with pytest.raises(ClientError):
        sqs.get_queue_url(QueueName=name)


def test_an_attribute_is_edited_and_a_bad_value_is_refused_with_the_api_s_message(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    sqs.create_queue(QueueName=name)
    page.goto(f"{console.admin}/queues/{name}")
    page.get_by_label("Visibility timeout (seconds)").fill("60")
    page.get_by_role("button", name="Save attributes").click()
    expect(page.get_by_role("status")).to_have_text("Saved VisibilityTimeout.")
    assert attributes_of(sqs, name)["VisibilityTimeout"] == "60"

    page.get_by_label("Visibility timeout (seconds)").fill("43201")
    page.get_by_role("button", name="Save attributes").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("InvalidAttributeValue")
    expect(alert).to_contain_text("VisibilityTimeout")
    expect(page.get_by_label("Visibility timeout (seconds)")).to_have_value("43201")
    assert attributes_of(sqs, name)["VisibilityTimeout"] == "60"


def test_tags_are_added_and_removed(page: Page, console: Console, sqs: Any) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    page.goto(f"{console.admin}/queues/{name}")
    page.get_by_label("Add or change tags").fill("team=payments\nenv=staging")
    page.get_by_role("button", name="Save tags").click()
    expect(page.get_by_role("status")).to_have_text("Tagged env, team.")
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "payments", "env": "staging"}
    page.get_by_role("button", name="Remove tag env").click()
    expect(page.get_by_role("status")).to_have_text("Removed tag env.")
    expect(page.get_by_role("button", name="Remove tag env")).to_have_count(0)
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "payments"}


def test_a_queue_links_to_its_dead_letter_queue_which_lists_its_sources(
    page: Page, console: Console, sqs: Any
) -> None:
    prefix = unique("adm-redrive-")
    dlq_url = sqs.create_queue(QueueName=prefix + "-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"})
    for source in ("a", "b"):
        sqs.create_queue(QueueName=f"{prefix}-{source}", Attributes={"RedrivePolicy": policy})

    page.goto(f"{console.admin}/queues/{prefix}-a")
    redrive = page.locator("#redrive")
    expect(redrive).to_contain_text("Messages received more than 3 times go to")
    redrive.get_by_role("link", name=prefix + "-dlq").click()
    expect(page).to_have_url(f"{console.admin}/queues/{prefix}-dlq")
    sources = page.locator("[data-sources]")
    expect(sources.get_by_role("link")).to_have_text([f"{prefix}-a", f"{prefix}-b"])

    page.goto(f"{console.admin}/?prefix={prefix}")
    dlq_row = page.locator(f'tr[data-name="{prefix}-dlq"]')
    expect(dlq_row.locator(".badge-dlq")).to_have_text("DLQ")
    source_row = page.locator(f'tr[data-name="{prefix}-a"]')
    expect(source_row.locator(".badge-source")).to_have_text("→ " + prefix + "-dlq")


def test_purge_empties_the_queue_and_a_second_purge_gets_the_api_s_refusal(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(4)]
    )
    page.goto(f"{console.admin}/queues/{name}")
    expect(page.locator('[data-field="visible"]')).to_have_text("4")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Purge").click()
    expect(page.get_by_role("status")).to_have_text("Queue purged.")
    expect(page.locator('[data-field="visible"]')).to_have_text("0")
    assert attributes_of(sqs, name)["ApproximateNumberOfMessages"] == "0"
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Purge").click()
    expect(page.get_by_role("alert")).to_contain_text("PurgeQueueInProgress")


def test_a_queue_is_deleted_only_after_its_name_is_typed(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique()
    sqs.create_queue(QueueName=name)
    page.goto(f"{console.admin}/queues/{name}")
    page.get_by_role("link", name="Delete…").click()
    page.get_by_label("Type the queue's name").fill(name + "x")
    page.get_by_role("button", name="Delete this queue").click()
    expect(page.get_by_role("alert")).to_have_text("Type the queue's name exactly to delete it.")
    assert sqs.get_queue_url(QueueName=name)["QueueUrl"].endswith("/" + name)

    page.get_by_label("Type the queue's name").fill(name)
    page.get_by_role("button", name="Delete this queue").click()
    expect(page).to_have_url(console.admin + "/")
    expect(page.get_by_role("status")).to_have_text(f"Queue {name} deleted.")
    with pytest.raises(ClientError) as refused:
        sqs.get_queue_url(QueueName=name)
    assert refused.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_many_queues_are_filtered_by_prefix_and_paged(
    page: Page, console: Console, sqs: Any
) -> None:
    prefix = unique("adm-page-") + "-"
    names = [f"{prefix}{index:03d}" for index in range(60)]
    for name in names:
        sqs.create_queue(QueueName=name)
    # The console lists queue names at most every 2 s: queues made through the API (not the
    # console) may take that long to appear, so filter again until all 60 are there.
    deadline = time.monotonic() + 10
    while True:
        page.goto(console.admin + "/")
        page.get_by_label("Name prefix").fill(prefix)
        page.get_by_label("Per page").select_option("25")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_load_state()
        if page.locator("[data-total]").inner_text() == "60" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    expect(page.locator("[data-total]")).to_have_text("60")
    rows = page.locator("tbody[data-queue-rows] tr[data-name]")
    expect(rows).to_have_count(25)
    expect(rows.first).to_have_attribute("data-name", names[0])
    pager = page.get_by_role("navigation", name="Pages")
    expect(pager).to_contain_text("Page 1 of 3")
    pager.get_by_role("link", name="Next").click()
    expect(pager).to_contain_text("Page 2 of 3")
    expect(rows.first).to_have_attribute("data-name", names[25])
    expect(rows).to_have_count(25)
    pager.get_by_role("link", name="Last").click()
    expect(rows).to_have_count(10)
    expect(rows.last).to_have_attribute("data-name", names[-1])
    # The filter narrows further; the live refresh keeps the page's rows.
    page.get_by_label("Name prefix").fill(prefix + "05")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(10)
    expect(page.locator("[data-total]")).to_have_text("10")
    page.wait_for_function(
        "() => document.getElementById('main').hasAttribute('data-refreshed')",
        timeout=LIVE_SECONDS * 1000,
    )
    expect(rows).to_have_count(10)


def test_the_queue_list_shows_counts_badges_owner_and_cache_state(
    page: Page, console: Console, sqs: Any, showcase: dict[str, str]
) -> None:
    name = unique("adm-list-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="one")
    sqs.send_message(QueueUrl=url, MessageBody="two", DelaySeconds=600)
    page.goto(f"{console.admin}/?prefix={name}")
    row = page.locator(f'tr[data-name="{name}"]')
    expect(row.locator('[data-field="visible"]')).to_have_text("1")
    expect(row.locator('[data-field="delayed"]')).to_have_text("1")
    expect(row.locator('[data-field="in_flight"]')).to_have_text("0")
    expect(row.locator('[data-field="state"]')).to_have_text("filled")
    expect(row.locator('[data-field="server"]')).to_have_text(console.redis_label)
    expect(row.locator('[data-field="oldest"]')).to_have_text(re.compile(r"^\d+(\.\d)? s$"))

    page.goto(f"{console.admin}/?prefix={SHOWCASE_PREFIX}")
    expect(page.locator("tbody[data-queue-rows] tr[data-name]")).to_have_count(len(showcase))
    screenshot(page, "queues")
