"""Filter policies (SNS syntax) on message attributes: which messages match, which policies
are refused and with what error."""

from __future__ import annotations

import json

import pytest

from cqs.domain import filter_policy
from cqs.domain.errors import InvalidParameterValue
from cqs.domain.model import MessageAttributeValue


def string(value: str, data_type: str = "String") -> MessageAttributeValue:
    return MessageAttributeValue(data_type, string_value=value)


def number(value: str) -> MessageAttributeValue:
    return MessageAttributeValue("Number", string_value=value)


def matches(policy: object, **attributes: MessageAttributeValue) -> bool:
    return filter_policy.parse(json.dumps(policy)).matches(attributes)


def test_exact_string_matches_only_that_string() -> None:
    assert matches({"color": ["red", "blue"]}, color=string("blue"))
    assert not matches({"color": ["red", "blue"]}, color=string("green"))
    assert not matches({"color": ["red"]}, color=string("Red"))


def test_a_string_condition_does_not_match_a_number_attribute() -> None:
    assert not matches({"size": ["10"]}, size=number("10"))
    assert matches({"size": [10]}, size=number("10.0"))
    assert not matches({"size": [10]}, size=string("10"))


def test_custom_string_type_counts_as_string() -> None:
    assert matches({"color": ["red"]}, color=string("red", "String.colour"))


def test_every_key_must_match() -> None:
    policy = {"color": ["red"], "size": ["large"]}
    assert matches(policy, color=string("red"), size=string("large"))
    assert not matches(policy, color=string("red"), size=string("small"))
    assert not matches(policy, color=string("red"))


def test_attributes_the_policy_does_not_name_are_ignored() -> None:
    assert matches({"color": ["red"]}, color=string("red"), other=string("x"))


def test_prefix_suffix_and_equals_ignore_case() -> None:
    assert matches({"region": [{"prefix": "eu-"}]}, region=string("eu-west-1"))
    assert not matches({"region": [{"prefix": "eu-"}]}, region=string("us-east-1"))
    assert matches({"file": [{"suffix": ".png"}]}, file=string("a.png"))
    assert not matches({"file": [{"suffix": ".png"}]}, file=string("a.jpg"))
    assert matches({"c": [{"equals-ignore-case": "RED"}]}, c=string("rEd"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [("-1", False), ("0", False), ("0.5", True), ("100", True), ("100.01", False), ("x", False)],
)
def test_numeric_range_is_inclusive_or_exclusive_as_written(value: str, expected: bool) -> None:
    assert matches({"price": [{"numeric": [">", 0, "<=", 100]}]}, price=number(value)) is expected


def test_numeric_single_comparisons() -> None:
    assert matches({"n": [{"numeric": ["=", 3.5]}]}, n=number("3.50"))
    assert matches({"n": [{"numeric": [">=", 10]}]}, n=number("10"))
    assert not matches({"n": [{"numeric": ["<", 10]}]}, n=number("10"))


def test_exists_true_and_false() -> None:
    assert matches({"trace": [{"exists": True}]}, trace=string("x"))
    assert not matches({"trace": [{"exists": True}]})
    assert matches({"trace": [{"exists": False}]})
    assert not matches({"trace": [{"exists": False}]}, trace=string("x"))
    binary = MessageAttributeValue("Binary", binary_value=b"\x00")
    assert matches({"blob": [{"exists": True}]}, blob=binary)


def test_anything_but_values_list_and_prefix() -> None:
    assert matches({"s": [{"anything-but": "small"}]}, s=string("large"))
    assert not matches({"s": [{"anything-but": "small"}]}, s=string("small"))
    assert not matches({"s": [{"anything-but": ["a", "b"]}]}, s=string("b"))
    assert matches({"n": [{"anything-but": [1, 2]}]}, n=number("3"))
    assert not matches({"n": [{"anything-but": [1, 2]}]}, n=number("2.0"))
    assert not matches({"s": [{"anything-but": {"prefix": "tmp"}}]}, s=string("tmp-1"))
    assert matches({"s": [{"anything-but": {"prefix": "tmp"}}]}, s=string("final"))


def test_an_absent_attribute_matches_nothing_but_exists_false() -> None:
    for condition in ("red", 1, {"prefix": "r"}, {"anything-but": "red"},
                      {"numeric": [">", 0]}, {"exists": True}):
        assert not matches({"color": [condition]}), condition


def test_string_array_matches_when_any_element_matches() -> None:
    interests = string(json.dumps(["rugby", "soccer", 7]), "String.Array")
    assert matches({"i": ["soccer"]}, i=interests)
    assert matches({"i": [7]}, i=interests)
    assert not matches({"i": ["golf"]}, i=interests)


def test_values_in_one_list_are_alternatives() -> None:
    policy = {"p": ["exact", {"prefix": "pre"}, {"numeric": [">", 5]}]}
    assert matches(policy, p=string("exact"))
    assert matches(policy, p=string("prefixed"))
    assert matches(policy, p=number("6"))
    assert not matches(policy, p=number("5"))


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        ("not json", "not valid JSON"),
        ("[]", "JSON object"),
        ("{}", "JSON object"),
        ('{"a": "red"}', "non-empty JSON array"),
        ('{"a": []}', "non-empty JSON array"),
        ('{"a": [true]}', "not a string, number or operator"),
        ('{"a": [null]}', "not a string, number or operator"),
        ('{"a": [{"prefix": 1}]}', "prefix takes a non-empty string"),
        ('{"a": [{"exists": "yes"}]}', "exists takes true or false"),
        ('{"a": [{"numeric": [">"]}]}', "numeric takes"),
        ('{"a": [{"numeric": ["~", 1]}]}', "numeric wants an operator"),
        ('{"a": [{"numeric": ["<", 5, ">", 1]}]}', "lower bound"),
        ('{"a": [{"numeric": [">", 5, "<", 1]}]}', "lower bound"),
        ('{"a": [{"numeric": [">", 1e10]}]}', "between -1e9 and 1e9"),
        ('{"a": [{"wildcard": "x*"}]}', "unrecognized operator wildcard"),
        ('{"a": [{"prefix": "x", "suffix": "y"}]}', "exactly one key"),
        ('{"a": [{"anything-but": []}]}', "non-empty list"),
        ('{"a": [{"anything-but": [true]}]}', "only strings and numbers"),
        ('{"$or": [{"a": ["x"]}]}', "operator $or is not supported"),
        (json.dumps({f"k{i}": ["x"] for i in range(6)}), "more than 5 attributes"),
        (json.dumps({f"k{i}": [str(j) for j in range(4)] for i in range(4)}), "combinations"),
    ],
)
def test_bad_policies_are_refused_with_the_reason(policy: str, reason: str) -> None:
    with pytest.raises(InvalidParameterValue) as raised:
        filter_policy.parse(policy)
    assert str(raised.value).startswith("Invalid parameter: FilterPolicy: ")
    assert reason in str(raised.value)
