"""The multi-host runs' FIFO order check (tests/hosts/workload.py `order_violations`)."""

from __future__ import annotations

from benchmarks.harness.delivery_ledger import Acknowledged, Delivery, DeliveryLedger
from tests.hosts.workload import order_violations


def ledger_of(sent: list[str], delivered: list[tuple[str, float]]) -> DeliveryLedger:
    """Bodies are `<run>-<host>-<producer>-<n>`; a message id is its body upper-cased."""
    ledger = DeliveryLedger()
    for body in sent:
        ledger.record_acknowledged(Acknowledged(body.upper(), body, "q", 0.0, 0.0))
    for body, at in delivered:
        ledger.record_delivery(Delivery(body.upper(), body, "q", at - 0.1, at, 30))
    return ledger


def test_first_deliveries_in_send_order_within_each_group_are_no_violation() -> None:
    ledger = ledger_of(
        ["r-h1-0-0", "r-h1-0-1", "r-h1-1-0", "r-h1-1-1"],
        [("r-h1-1-0", 1.0), ("r-h1-0-0", 1.0), ("r-h1-0-1", 2.0), ("r-h1-1-1", 3.0),
         ("r-h1-0-0", 9.0)],  # a later repeat does not count
    )
    assert order_violations(ledger) == 0


def test_a_message_first_delivered_after_a_later_one_of_its_group_is_a_violation() -> None:
    ledger = ledger_of(
        ["r-h1-0-0", "r-h1-0-1", "r-h1-0-2"],
        [("r-h1-0-0", 1.0), ("r-h1-0-2", 2.0), ("r-h1-0-1", 3.0)],
    )
    assert order_violations(ledger) == 1


def test_messages_of_one_answer_keep_the_order_the_server_gave() -> None:
    ledger = ledger_of(["r-h3-2-0", "r-h3-2-1"], [("r-h3-2-1", 1.0), ("r-h3-2-0", 1.0)])
    assert order_violations(ledger) == 1
