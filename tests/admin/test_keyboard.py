"""The console with a keyboard alone: a skip link first, a visible focus ring, and the
main flows (log in, create a queue, find it by prefix, open it) without a mouse."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.admin.conftest import ADMIN_PASSWORD, Console, unique

MAX_TABS = 40


def focused_text(page: Page) -> str:
    """The text a link or button shows (a text field's typed value does not count)."""
    return str(page.evaluate("() => (document.activeElement.innerText || '').trim()"))


def focused_id(page: Page) -> str:
    return str(page.evaluate("() => document.activeElement.id"))


def tab_to(page: Page, text: str) -> None:
    """Press Tab until the focused element shows `text` (as a user scanning with Tab would)."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if focused_text(page) == text:
            return
    raise AssertionError(f"{MAX_TABS} presses of Tab never reached {text!r}")


def tab_to_field(page: Page, field_id: str) -> None:
    """Press Tab until the field with this id has the focus (it may have it already)."""
    for _ in range(MAX_TABS):
        if focused_id(page) == field_id:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{MAX_TABS} presses of Tab never reached #{field_id}")


def test_the_first_tab_offers_a_skip_link_that_moves_focus_to_the_content(
    page: Page, console: Console
) -> None:
    page.goto(console.admin + "/")
    page.keyboard.press("Tab")
    assert focused_text(page) == "Skip to content"
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_in_viewport()  # hidden off-screen until focused
    page.keyboard.press("Enter")
    assert focused_id(page) == "main"


def test_the_focused_control_has_a_visible_ring(page: Page, console: Console) -> None:
    page.goto(console.admin + "/")
    tab_to(page, "Create queue")
    outline = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, s.outlineWidth]; }"
    )
    assert outline[0] != "none" and outline[1] != "0px", outline


def test_logging_in_with_the_keyboard(anonymous: Page, console: Console) -> None:
    anonymous.goto(console.admin + "/login")
    tab_to_field(anonymous, "user")
    anonymous.keyboard.type("admin")
    anonymous.keyboard.press("Tab")
    anonymous.keyboard.type(ADMIN_PASSWORD)
    anonymous.keyboard.press("Enter")
    expect(anonymous).to_have_url(console.admin + "/")
    expect(anonymous.get_by_text("Signed in as admin")).to_be_visible()


def test_a_queue_is_created_found_and_opened_with_the_keyboard(
    page: Page, console: Console, sqs: Any
) -> None:
    name = unique("adm-keys-")
    page.goto(console.admin + "/")
    tab_to(page, "Create queue")
    page.keyboard.press("Enter")
    expect(page).to_have_url(console.admin + "/new-queue")
    # The name field has autofocus: typing goes straight into it; Enter submits the form.
    # Autofocus applies once the page has loaded, so the test waits for it, as a user sees it.
    expect(page.locator("#QueueName")).to_be_focused()
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{console.admin}/queues/{name}")
    assert sqs.get_queue_url(QueueName=name)["QueueUrl"].endswith("/" + name)

    page.goto(console.admin + "/")
    tab_to_field(page, "prefix")
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    expect(page.locator("tbody[data-queue-rows] tr[data-name]")).to_have_count(1)
    tab_to(page, name)
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{console.admin}/queues/{name}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(name)
