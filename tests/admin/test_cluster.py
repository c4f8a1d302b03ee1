"""The cluster view: API processes, the Redis server with its queues and memory,
Cassandra's status, the revisibility lag."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from cqs.embedded.cassandra5_install import cassandra_version
from tests.admin.conftest import Console, screenshot

# The embedded node's release_version: the one the 5.0 pom names.
EMBEDDED_RELEASE = cassandra_version()


def test_the_cluster_view_shows_redis_cassandra_and_the_api_process(
    page: Page, console: Console, showcase: dict[str, str]
) -> None:
    page.goto(console.admin + "/cluster")
    expect(page.locator('[data-field="readiness"]')).to_contain_text("ready")
    redis = page.locator(f'tr[data-server="{console.redis_label}"]')
    expect(redis.locator('[data-field="status"]')).to_have_text("up")
    expect(redis.locator('[data-field="memory"]')).to_have_text(re.compile(r"^\d+(\.\d+)?[KMG]?$"))
    # back-pressure: this process's Redis calls running / waiting, of the pool's size
    expect(redis.locator('[data-field="pool"]')).to_have_text(re.compile(r"^\d+ / \d+ of 64$"))
    cassandra = page.locator("[data-cassandra]")
    expect(cassandra.locator('[data-field="cassandra-status"]')).to_have_text("up")
    expect(cassandra).to_contain_text(EMBEDDED_RELEASE)
    expect(page.locator("[data-processes]")).to_contain_text(str(console.pid))
    page.get_by_text(f"Queues on {console.redis_label}").click()
    owned = page.locator("details.owned")
    expect(owned.get_by_role("link", name="shop-orders", exact=True)).to_be_visible()
    screenshot(page, "cluster", full_page=True)


def test_the_cluster_view_refreshes_live(page: Page, console: Console, sqs: Any) -> None:
    page.goto(console.admin + "/cluster")
    before = int(page.locator("[data-cassandra] [data-field=total_queues]").inner_text())
    sqs.create_queue(QueueName=f"adm-cluster-{before}-{console.pid}")
    expect(page.locator("[data-cassandra] [data-field=total_queues]")).to_have_text(
        str(before + 1), timeout=20_000
    )
