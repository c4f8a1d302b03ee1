"""Pure helpers of the service: pages of queue names and queue ARNs."""

from __future__ import annotations

import pytest

from cqs.domain import arns
from cqs.domain.errors import InvalidParameterValue
from cqs.service import pagination


def test_a_page_ends_with_a_token_that_continues_after_its_last_name() -> None:
    names = ["a", "b", "c", "d", "e"]
    first, token = pagination.page(names, 2, None)
    assert first == ["a", "b"]
    assert token is not None
    second, token = pagination.page(names, 2, pagination.read_name_token(token))
    assert second == ["c", "d"]
    assert token is not None
    last, token = pagination.page(names, 2, pagination.read_name_token(token))
    assert (last, token) == (["e"], None)


def test_without_max_results_every_name_up_to_the_limit_comes_without_a_token() -> None:
    names = [f"q{i:05d}" for i in range(pagination.LIST_QUEUES_LIMIT + 5)]
    page, token = pagination.page(names, None, None)
    assert page == names[: pagination.LIST_QUEUES_LIMIT]
    assert token is None


@pytest.mark.parametrize("max_results", [0, pagination.LIST_QUEUES_LIMIT + 1])
def test_max_results_outside_one_to_a_thousand_is_refused(max_results: int) -> None:
    with pytest.raises(InvalidParameterValue):
        pagination.check_max_results(max_results)


def test_a_next_token_that_is_not_base64_is_refused() -> None:
    with pytest.raises(InvalidParameterValue):
        pagination.read_name_token("abc")  # not padded: not base64


def test_a_queue_arn_names_region_account_and_queue_and_reads_back() -> None:
    arn = arns.queue_arn("eu-west-1", "123456789012", "orders.fifo")
    assert arn == "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
    assert arns.queue_name_from_arn(arn) == "orders.fifo"
    assert arns.partition_of(arn) == "aws"


def test_text_that_is_not_a_queue_arn_names_no_queue() -> None:
    assert arns.queue_name_from_arn("arn:aws:sns:us-east-1:123456789012:topic") is None
    assert arns.queue_name_from_arn("orders") is None
