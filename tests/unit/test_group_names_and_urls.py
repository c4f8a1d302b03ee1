"""Consumer group names, and how group URLs and ARNs read back to the group's queue name."""

from __future__ import annotations

import pytest

from cqs.domain import arns, group_names
from cqs.domain.errors import InvalidParameterValue, QueueDoesNotExist
from cqs.domain.model import QueueIdentity
from cqs.sqs_api.urls import queue_address_from_url, queue_url

ACCOUNT = "123456789012"


def test_a_group_url_is_the_queue_url_with_one_more_segment() -> None:
    name = group_names.group_queue_name("orders", "billing")
    url = queue_url("http://localhost:4566", ACCOUNT, name)
    assert url == f"http://localhost:4566/{ACCOUNT}/orders/billing"
    assert queue_address_from_url(url, "000000000000") == (ACCOUNT, "orders/billing")


@pytest.mark.parametrize(
    ("url", "address"),
    [
        (f"http://h/{ACCOUNT}/orders", (ACCOUNT, "orders")),
        (f"http://h/sqs/{ACCOUNT}/orders", (ACCOUNT, "orders")),  # a base URL with a path
        (f"http://h/sqs/{ACCOUNT}/orders/billing", (ACCOUNT, "orders/billing")),
        (f"http://h/{ACCOUNT}/123456789012/g", (ACCOUNT, "123456789012/g")),
        ("orders", ("000000000000", "orders")),
    ],
)
def test_queue_and_group_urls_read_back(url: str, address: tuple[str, str]) -> None:
    assert queue_address_from_url(url, "000000000000") == address


def test_a_url_naming_nothing_is_still_queue_does_not_exist() -> None:
    with pytest.raises(QueueDoesNotExist):
        queue_address_from_url("http://h/", ACCOUNT)


def test_group_arns_read_back() -> None:
    arn = arns.queue_arn("us-east-1", ACCOUNT, "orders/billing")
    assert arns.queue_identity_from_arn(arn) == QueueIdentity(ACCOUNT, "us-east-1", "orders/billing")
    assert arns.queue_identity_from_arn(f"arn:aws:sqs:us-east-1:{ACCOUNT}:a/b/c") is None


@pytest.mark.parametrize("name", ["billing", "a", "B-2_x", "x" * 80])
def test_valid_group_names(name: str) -> None:
    assert group_names.validate_group_name(name) == name
    assert group_names.is_group_queue_name(group_names.group_queue_name("q", name))


@pytest.mark.parametrize("name", ["", "a b", "a/b", "a.fifo", "x" * 81, 5])
def test_invalid_group_names_are_refused(name: object) -> None:
    with pytest.raises(InvalidParameterValue):
        group_names.validate_group_name(name)


def test_split_tells_groups_from_queues() -> None:
    assert group_names.split_group_queue_name("orders/billing") == ("orders", "billing")
    assert group_names.split_group_queue_name("orders") is None
    assert not group_names.is_group_queue_name("orders")
    assert not group_names.is_group_queue_name("bad name/g")
