"""Consumer groups (#19) on the console: a queue's page lists its groups with their filter
policies, visibility timeouts, dead-letter queues and counts; each group has a page of its
own (the queue page of `<queue>/<group>`, its slash sent as %2F) with its own counts,
messages and history; the queue list counts a queue's groups; groups are created and
deleted from the queue page, checked afterwards through the extension actions and boto3."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from cqs.client import ExtensionClient
from tests.admin.conftest import LIVE_SECONDS, Console, screenshot, unique

EU_ONLY = {"region": [{"prefix": "eu-"}]}


@pytest.fixture(scope="module")
def extensions(console: Console) -> ExtensionClient:
    return ExtensionClient(console.url, "us-east-1", "x", "x")


def group_path(queue: str, group: str) -> str:
    return "/queues/" + urllib.parse.quote(f"{queue}/{group}", safe="")


def send(sqs: Any, url: str, region: str, count: int) -> None:
    for index in range(count):
        sqs.send_message(QueueUrl=url, MessageBody=f"{region} #{index}", MessageAttributes={
            "region": {"DataType": "String", "StringValue": region},
        })


def test_the_queue_page_lists_its_groups_with_filters_timeouts_and_dead_letters(
    page: Page, console: Console, sqs: Any, extensions: ExtensionClient
) -> None:
    name = unique("adm-groups-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    dead_letters = unique("adm-groups-dlq-")
    dlq_arn = sqs.get_queue_attributes(
        QueueUrl=sqs.create_queue(QueueName=dead_letters)["QueueUrl"],
        AttributeNames=["QueueArn"],
    )["Attributes"]["QueueArn"]
    extensions.call("CreateConsumerGroup", {
        "QueueUrl": url, "GroupName": "billing", "Attributes": {
            "FilterPolicy": json.dumps(EU_ONLY), "VisibilityTimeout": "120",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}),
        },
    })
    extensions.call("CreateConsumerGroup", {"QueueUrl": url, "GroupName": "audit"})

    page.goto(f"{console.admin}/queues/{name}")
    section = page.locator("#groups")
    expect(section.get_by_role("heading", name="Consumer groups")).to_be_visible()
    rows = section.locator("tbody tr[data-group]")
    expect(rows).to_have_count(2)
    billing = section.locator(f'tr[data-group="{name}/billing"]')
    # The policy as indented JSON, exactly as given.
    expect(billing.locator('[data-field="filter_policy"]')).to_have_text(
        json.dumps(EU_ONLY, indent=2)
    )
    expect(billing.locator('[data-field="visibility_timeout"]')).to_have_text("2 min 0 s")
    expect(billing.locator('[data-field="dead_letters"]')).to_have_text(
        f"{dead_letters} after 3 receives"
    )
    audit = section.locator(f'tr[data-group="{name}/audit"]')
    expect(audit.locator('[data-field="filter_policy"]')).to_have_text("every message")
    expect(audit.locator('[data-field="visibility_timeout"]')).to_have_text("30 s")
    expect(audit.locator('[data-field="dead_letters"]')).to_have_text("none")
    screenshot(page, "consumer-groups", full_page=True)

    # The queue list keeps groups out of its rows and counts them on their queue's row.
    page.goto(f"{console.admin}/?prefix={name}")
    expect(page.locator("tbody tr[data-name]")).to_have_count(1)
    expect(page.locator(f'tr[data-name="{name}"] [data-group-count]')).to_have_text("2 groups")


def test_a_group_page_shows_the_group_s_own_counts_messages_and_filter(
    page: Page, console: Console, sqs: Any, extensions: ExtensionClient
) -> None:
    name = unique("adm-groups-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    extensions.call("CreateConsumerGroup", {
        "QueueUrl": url, "GroupName": "eu", "Attributes": {"FilterPolicy": json.dumps(EU_ONLY)},
    })
    extensions.call("CreateConsumerGroup", {"QueueUrl": url, "GroupName": "everything"})
    send(sqs, url, "eu-west-1", 3)
    send(sqs, url, "us-east-1", 4)
    # One of the filtered group's messages in flight, received by an ordinary SQS client.
    received = sqs.receive_message(QueueUrl=url + "/eu", VisibilityTimeout=600)["Messages"]
    assert len(received) == 1

    page.goto(f"{console.admin}/queues/{name}")
    eu = page.locator(f'tr[data-group="{name}/eu"]')
    expect(eu.locator('[data-field="visible"]')).to_have_text("2")
    expect(eu.locator('[data-field="in_flight"]')).to_have_text("1")
    everything = page.locator(f'tr[data-group="{name}/everything"]')
    expect(everything.locator('[data-field="visible"]')).to_have_text("7")
    expect(page.locator('#now-heading ~ dl [data-field="visible"]')).to_have_text("7")
    # The group counts follow new sends without a reload.
    page.evaluate("window.notReloaded = true")
    send(sqs, url, "eu-central-1", 2)
    send(sqs, url, "ap-south-1", 1)
    expect(eu.locator('[data-field="visible"]')).to_have_text("4", timeout=LIVE_SECONDS * 1000)
    expect(everything.locator('[data-field="visible"]')).to_have_text(
        "10", timeout=LIVE_SECONDS * 1000
    )
    assert page.evaluate("window.notReloaded") is True

    page.get_by_role("link", name="eu", exact=True).click()
    expect(page).to_have_url(console.admin + group_path(name, "eu"))
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"{name}/eu")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Consumer group")
    expect(page.locator("[data-filter-policy]")).to_have_text(json.dumps(EU_ONLY, indent=2))
    expect(page.locator('[data-field="visible"]')).to_have_text("4")
    expect(page.locator('[data-field="in_flight"]')).to_have_text("1")
    expect(page.locator("#groups")).to_have_count(0)  # groups have no groups

    # Its message browser peeks at the group's own copies: the matching three only.
    page.get_by_role("link", name="Browse messages").click()
    expect(page).to_have_url(console.admin + group_path(name, "eu") + "/messages")
    rows = page.locator("tbody tr[data-message]")
    expect(rows).to_have_count(5)
    previews = sorted(page.locator(".body-preview").all_text_contents())
    assert previews == [
        "eu-central-1 #0", "eu-central-1 #1", "eu-west-1 #0", "eu-west-1 #1", "eu-west-1 #2"
    ]
    rows.first.get_by_role("link").click()
    expect(page.locator("[data-message-state]")).to_be_visible()

    # Back through the breadcrumbs: the group's page, then its queue's.
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="eu", exact=True).click()
    expect(page).to_have_url(console.admin + group_path(name, "eu"))
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name=name, exact=True).click()
    expect(page).to_have_url(f"{console.admin}/queues/{name}")


def test_a_group_is_created_and_deleted_from_the_queue_page(
    page: Page, console: Console, sqs: Any, extensions: ExtensionClient
) -> None:
    name = unique("adm-groups-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    page.goto(f"{console.admin}/queues/{name}")
    form = page.locator("#groups form").last

    form.get_by_label("Group name").fill("eu")
    form.get_by_label("Filter policy").fill('{"region": [{"prefix": ')  # not JSON
    form.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("alert")).to_contain_text("FilterPolicy: it is not valid JSON")
    assert extensions.call("ListConsumerGroups", {"QueueUrl": url})["ConsumerGroups"] == []

    form.get_by_label("Group name").fill("eu")
    form.get_by_label("Filter policy").fill(json.dumps(EU_ONLY))
    form.get_by_label("Visibility timeout").fill("75")
    form.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("status")).to_have_text("Consumer group eu created.")
    expect(page).to_have_url(f"{console.admin}/queues/{name}#groups")
    row = page.locator(f'tr[data-group="{name}/eu"]')
    expect(row.locator('[data-field="visibility_timeout"]')).to_have_text("1 min 15 s")
    listed = extensions.call("ListConsumerGroups", {"QueueUrl": url})["ConsumerGroups"]
    assert [(g["GroupName"], json.loads(g["Attributes"]["FilterPolicy"]),
             g["Attributes"]["VisibilityTimeout"]) for g in listed] == [("eu", EU_ONLY, "75")]
    send(sqs, url, "eu-north-1", 1)
    send(sqs, url, "us-west-2", 1)
    got = sqs.receive_message(QueueUrl=url + "/eu", MaxNumberOfMessages=10, WaitTimeSeconds=2)
    assert [m["Body"] for m in got["Messages"]] == ["eu-north-1 #0"]

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete consumer group eu").click()
    expect(page.get_by_role("status")).to_have_text("Consumer group eu deleted.")
    expect(page.locator("#groups tbody tr[data-group]")).to_have_count(0)
    assert extensions.call("ListConsumerGroups", {"QueueUrl": url})["ConsumerGroups"] == []
    page.goto(console.admin + group_path(name, "eu"))
    expect(page.get_by_role("heading", name="No such queue")).to_be_visible()


def test_fifo_queues_show_no_consumer_groups_section(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-groups-") + ".fifo"
    sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true"})
    page.goto(f"{console.admin}/queues/{name}")
    expect(page.locator("#attributes")).to_be_visible()
    expect(page.locator("#groups")).to_have_count(0)
