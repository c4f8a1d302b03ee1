"""The queue Policy evaluator against AWS's documented SQS policy examples, the IAM condition
operator rules, the statement AddPermission writes, and hostile documents."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqs.domain import permissions
from cqs.domain.access_policy import AccessRequest, Decision, evaluate, policy_action

OWNER = "444455556666"
OTHER = "111122223333"
STRANGER = "999988887777"
QUEUE1 = f"arn:aws:sqs:us-east-2:{OWNER}:queue1"
TOPIC = "arn:aws:sns:us-east-2:444455556666:MyTopic"

ALLOW, DENY, NOT_APPLICABLE = Decision.ALLOW, Decision.DENY, Decision.NOT_APPLICABLE


def request(
    account: str = OTHER,
    action: str = "SendMessage",
    resource: str = QUEUE1,
    **context: object,
) -> AccessRequest:
    return AccessRequest(
        principal_account=account,
        principal_arn=f"arn:aws:iam::{account}:root",
        action=policy_action(action),
        resource=resource,
        **context,  # type: ignore[arg-type]
    )


def policy(*statements: dict[str, object]) -> str:
    return json.dumps({"Version": "2012-10-17", "Id": "Queue1_Policy_UUID",
                       "Statement": list(statements)})


def allow(**fields: object) -> dict[str, object]:
    return {"Effect": "Allow", **fields}


def deny(**fields: object) -> dict[str, object]:
    return {"Effect": "Deny", **fields}


# --- AWS's SQS policy examples ---------------------------------------------------------------

def test_one_permission_granted_to_one_account_allows_only_that_account_and_action() -> None:
    document = policy(allow(
        Sid="Queue1_SendMessage", Principal={"AWS": [OTHER]}, Action="sqs:SendMessage",
        Resource=QUEUE1,
    ))
    assert evaluate(document, request(OTHER, "SendMessage")) is ALLOW
    assert evaluate(document, request(OTHER, "ReceiveMessage")) is NOT_APPLICABLE
    assert evaluate(document, request(STRANGER, "SendMessage")) is NOT_APPLICABLE
    other_queue = f"arn:aws:sqs:us-east-2:{OWNER}:queue2"
    assert evaluate(document, request(OTHER, resource=other_queue)) is NOT_APPLICABLE


def test_two_permissions_with_a_region_wildcard_in_the_resource() -> None:
    document = policy(allow(
        Principal={"AWS": [OTHER]}, Action=["sqs:SendMessage", "sqs:ReceiveMessage"],
        Resource=f"arn:aws:sqs:*:{OWNER}:queue1",
    ))
    assert evaluate(document, request(action="ReceiveMessage")) is ALLOW
    assert evaluate(document, request(resource=f"arn:aws:sqs:eu-west-1:{OWNER}:queue1")) is ALLOW
    assert evaluate(document, request(action="DeleteMessage")) is NOT_APPLICABLE
    assert evaluate(document, request(resource=f"arn:aws:sqs:us-east-2:{OWNER}:queue11")) is (
        NOT_APPLICABLE
    )


def test_all_actions_granted_to_two_accounts() -> None:
    document = policy(allow(
        Principal={"AWS": [OTHER, STRANGER]}, Action="sqs:*", Resource=QUEUE1,
    ))
    for action in ("SendMessage", "ReceiveMessage", "DeleteMessage", "GetQueueAttributes"):
        assert evaluate(document, request(OTHER, action)) is ALLOW
        assert evaluate(document, request(STRANGER, action)) is ALLOW
    assert evaluate(document, request("123412341234")) is NOT_APPLICABLE


def test_a_grant_to_an_iam_role_or_user_names_no_account_root() -> None:
    document = policy(allow(
        Principal={"AWS": [f"arn:aws:iam::{OTHER}:role/role1", f"arn:aws:iam::{OTHER}:user/u1"]},
        Action="sqs:*", Resource=QUEUE1,
    ))
    # cqs callers are account roots: a role or a user of that account is someone else.
    assert evaluate(document, request(OTHER)) is NOT_APPLICABLE
    as_role = AccessRequest(OTHER, f"arn:aws:iam::{OTHER}:role/role1", "sqs:SendMessage", QUEUE1)
    assert evaluate(document, as_role) is ALLOW


def test_a_permission_granted_to_all_users() -> None:
    for principal in ("*", {"AWS": "*"}):
        document = policy(allow(Principal=principal, Action="sqs:SendMessage", Resource=QUEUE1))
        assert evaluate(document, request(STRANGER)) is ALLOW
        assert evaluate(document, request(STRANGER, "ReceiveMessage")) is NOT_APPLICABLE


def test_an_sns_topic_grant_matches_only_requests_from_that_topic() -> None:
    for operator in ("ArnEquals", "ArnLike", "StringLike", "StringEquals"):
        document = policy(allow(
            Principal={"AWS": "*"}, Action="SQS:SendMessage", Resource=QUEUE1,
            Condition={operator: {"aws:SourceArn": TOPIC}},
        ))
        # A direct call carries no aws:SourceArn, so it does not get the topic's grant.
        assert evaluate(document, request(STRANGER)) is NOT_APPLICABLE, operator
        assert evaluate(document, request(STRANGER, source_arn=TOPIC)) is ALLOW, operator
        other_topic = TOPIC.replace("MyTopic", "Other")
        assert evaluate(document, request(STRANGER, source_arn=other_topic)) is (
            NOT_APPLICABLE
        ), operator


def test_source_account_condition() -> None:
    document = policy(allow(
        Principal="*", Action="sqs:SendMessage", Resource=QUEUE1,
        Condition={"StringEquals": {"aws:SourceAccount": OWNER}},
    ))
    assert evaluate(document, request(STRANGER, source_account=OWNER)) is ALLOW
    assert evaluate(document, request(STRANGER, source_account=STRANGER)) is NOT_APPLICABLE
    assert evaluate(document, request(STRANGER)) is NOT_APPLICABLE


def test_deny_unless_secure_transport_refuses_plain_http_and_lets_tls_through() -> None:
    document = policy(
        allow(Principal={"AWS": OTHER}, Action="sqs:*", Resource=QUEUE1),
        deny(Principal="*", Action="sqs:*", Resource=QUEUE1,
             Condition={"Bool": {"aws:SecureTransport": "false"}}),
    )
    assert evaluate(document, request(OTHER, secure_transport=False)) is DENY
    assert evaluate(document, request(OTHER, secure_transport=True)) is ALLOW
    # The JSON boolean and other spellings mean the same.
    json_bool = policy(deny(Principal="*", Action="*", Resource="*",
                            Condition={"BoolIfExists": {"AWS:SecureTransport": False}}))
    assert evaluate(json_bool, request(OWNER, secure_transport=False)) is DENY
    assert evaluate(json_bool, request(OWNER, secure_transport=True)) is NOT_APPLICABLE


def test_an_explicit_deny_wins_over_an_allow_in_any_order() -> None:
    grant = allow(Principal={"AWS": OTHER}, Action="sqs:*", Resource=QUEUE1)
    refusal = deny(Principal={"AWS": f"arn:aws:iam::{OTHER}:root"}, Action="sqs:SendMessage",
                   Resource=QUEUE1)
    for document in (policy(grant, refusal), policy(refusal, grant)):
        assert evaluate(document, request(OTHER, "SendMessage")) is DENY
        assert evaluate(document, request(OTHER, "ReceiveMessage")) is ALLOW


def test_a_deny_of_one_account_leaves_others_to_the_allow() -> None:
    document = policy(
        allow(Principal="*", Action="sqs:SendMessage", Resource=QUEUE1),
        deny(Principal={"AWS": [STRANGER]}, Action="sqs:*", Resource=QUEUE1),
    )
    assert evaluate(document, request(STRANGER)) is DENY
    assert evaluate(document, request(OTHER)) is ALLOW


def test_the_statement_add_permission_writes_grants_exactly_its_accounts_and_actions() -> None:
    document = permissions.add_permission(
        None, QUEUE1, "share", [OTHER], ["SendMessage", "ReceiveMessage"]
    )
    assert '"SQS:SendMessage"' in document  # the spelling AWS writes
    assert evaluate(document, request(OTHER, "SendMessage")) is ALLOW
    assert evaluate(document, request(OTHER, "SendMessageBatch")) is ALLOW
    assert evaluate(document, request(OTHER, "ReceiveMessage")) is ALLOW
    assert evaluate(document, request(OTHER, "DeleteMessage")) is NOT_APPLICABLE
    assert evaluate(document, request(STRANGER, "SendMessage")) is NOT_APPLICABLE
    everything = permissions.add_permission(document, QUEUE1, "all", [STRANGER], ["*"])
    assert evaluate(everything, request(STRANGER, "DeleteMessageBatch")) is ALLOW
    assert evaluate(everything, request(STRANGER, "ChangeMessageVisibility")) is ALLOW


# --- actions, resources and principals -------------------------------------------------------

def test_batch_actions_are_authorized_as_their_single_message_action() -> None:
    assert policy_action("SendMessageBatch") == "sqs:SendMessage"
    assert policy_action("DeleteMessageBatch") == "sqs:DeleteMessage"
    assert policy_action("ChangeMessageVisibilityBatch") == "sqs:ChangeMessageVisibility"
    assert policy_action("PurgeQueue") == "sqs:PurgeQueue"


@pytest.mark.parametrize("pattern, allowed", [
    ("sqs:SendMessage", True), ("SQS:SENDMESSAGE", True), ("sqs:Send*", True),
    ("sqs:*Message", True), ("sqs:SendMessag?", True), ("*", True), ("sqs:*", True),
    ("sqs:Receive*", False), ("sns:SendMessage", False), ("sqs:SendMessage?", False),
    ("sqs:SendMessageBatch", False),
])
def test_action_patterns(pattern: str, allowed: bool) -> None:
    document = policy(allow(Principal="*", Action=pattern, Resource="*"))
    assert (evaluate(document, request()) is ALLOW) is allowed


def test_not_action_and_not_resource_cover_everything_they_do_not_name() -> None:
    document = policy(allow(Principal="*", NotAction=["sqs:DeleteMessage"], Resource=QUEUE1))
    assert evaluate(document, request(action="SendMessage")) is ALLOW
    assert evaluate(document, request(action="DeleteMessageBatch")) is NOT_APPLICABLE
    document = policy(deny(Principal="*", Action="sqs:*", NotResource=f"arn:aws:sqs:*:{OWNER}:public-*"))
    assert evaluate(document, request()) is DENY
    assert evaluate(document, request(resource=f"arn:aws:sqs:us-east-2:{OWNER}:public-1")) is (
        NOT_APPLICABLE
    )


@pytest.mark.parametrize("resource, allowed", [
    (QUEUE1, True), ("*", True), (f"arn:aws:sqs:us-east-2:{OWNER}:*", True),
    (f"arn:aws:sqs:us-east-2:{OWNER}:queue?", True), ("arn:aws:sqs:*", True),
    (f"arn:aws:sqs:us-east-2:{OWNER}:Queue1", False), (f"arn:aws:sqs:us-east-2:{OTHER}:*", False),
    (f"arn:aws:sqs:us-east-2:{OWNER}:queue", False),
])
def test_resource_patterns(resource: str, allowed: bool) -> None:
    document = policy(allow(Principal="*", Action="sqs:*", Resource=resource))
    assert (evaluate(document, request()) is ALLOW) is allowed


def test_a_statement_without_resource_covers_the_queue_it_is_attached_to() -> None:
    assert evaluate(policy(allow(Principal="*", Action="sqs:SendMessage")), request()) is ALLOW


@pytest.mark.parametrize("principal, allowed", [
    ("*", True), ({"AWS": "*"}, True), ({"AWS": OTHER}, True), ({"AWS": [STRANGER, OTHER]}, True),
    ({"AWS": f"arn:aws:iam::{OTHER}:root"}, True), ({"AWS": f"arn:aws-cn:iam::{OTHER}:root"}, True),
    ({"AWS": STRANGER}, False), ({"Service": "sns.amazonaws.com"}, False),
    ({"AWS": f"arn:aws:iam::{OTHER}:user/alice"}, False), ({"AWS": "1111*"}, False),
    ({}, False), ("111122223333", False),
])
def test_principals(principal: object, allowed: bool) -> None:
    document = policy(allow(Principal=principal, Action="sqs:*", Resource=QUEUE1))
    assert (evaluate(document, request(OTHER)) is ALLOW) is allowed


def test_not_principal_denies_everyone_but_the_named_accounts() -> None:
    document = policy(
        allow(Principal="*", Action="sqs:*", Resource=QUEUE1),
        deny(NotPrincipal={"AWS": [OWNER, f"arn:aws:iam::{OTHER}:root"]}, Action="sqs:*",
             Resource=QUEUE1),
    )
    assert evaluate(document, request(OTHER)) is ALLOW
    assert evaluate(document, request(OWNER)) is ALLOW
    assert evaluate(document, request(STRANGER)) is DENY


def test_a_single_statement_object_is_read_like_a_list_of_one() -> None:
    document = json.dumps({"Statement": allow(Principal="*", Action="sqs:*", Resource="*")})
    assert evaluate(document, request()) is ALLOW


# --- condition operators (IAM condition operator reference) ----------------------------------

def conditioned(condition: dict[str, object], effect: str = "Allow") -> str:
    return policy({"Effect": effect, "Principal": "*", "Action": "sqs:*", "Resource": QUEUE1,
                   "Condition": condition})


@pytest.mark.parametrize("condition, source_arn, allowed", [
    ({"StringEquals": {"aws:SourceArn": TOPIC}}, TOPIC, True),
    ({"StringEquals": {"aws:SourceArn": TOPIC.upper()}}, TOPIC, False),
    ({"StringEqualsIgnoreCase": {"aws:SourceArn": TOPIC.upper()}}, TOPIC, True),
    ({"StringNotEquals": {"aws:SourceArn": TOPIC}}, TOPIC, False),
    ({"StringNotEquals": {"aws:SourceArn": "x"}}, TOPIC, True),
    ({"StringNotEqualsIgnoreCase": {"aws:SourceArn": TOPIC.upper()}}, TOPIC, False),
    ({"StringLike": {"aws:SourceArn": "arn:aws:sns:*:444455556666:My*"}}, TOPIC, True),
    ({"StringLike": {"aws:SourceArn": "arn:aws:sns:*:444455556666:my*"}}, TOPIC, False),
    ({"StringNotLike": {"aws:SourceArn": "arn:aws:sns:*"}}, TOPIC, False),
    ({"ArnLike": {"aws:SourceArn": "arn:aws:sns:*:*:*"}}, TOPIC, True),
    # ArnLike matches each colon-separated component apart: `*` does not span colons.
    ({"ArnLike": {"aws:SourceArn": "arn:aws:sns:*:MyTopic"}}, TOPIC, False),
    ({"StringLike": {"aws:SourceArn": "arn:aws:sns:*:MyTopic"}}, TOPIC, True),
    ({"ArnNotLike": {"aws:SourceArn": "arn:aws:sns:*:*:Other"}}, TOPIC, True),
    ({"ArnNotEquals": {"aws:SourceArn": TOPIC}}, TOPIC, False),
    # Several values of one key: any of them (none of them for the negated operators).
    ({"ArnEquals": {"aws:SourceArn": ["arn:aws:sns:us-east-2:1:a", TOPIC]}}, TOPIC, True),
    ({"StringNotEquals": {"aws:SourceArn": ["arn:aws:sns:us-east-2:1:a", TOPIC]}}, TOPIC, False),
    # Condition keys are case-insensitive.
    ({"ArnEquals": {"AWS:SOURCEARN": TOPIC}}, TOPIC, True),
])
def test_string_and_arn_operators(
    condition: dict[str, object], source_arn: str, allowed: bool
) -> None:
    assert (evaluate(conditioned(condition), request(source_arn=source_arn)) is ALLOW) is allowed


@pytest.mark.parametrize("operator, allowed", [
    ("StringEquals", False), ("StringLike", False), ("ArnEquals", False), ("ArnLike", False),
    ("Bool", False),
    # Negated operators are true when the key is absent, as IAM documents.
    ("StringNotEquals", True), ("StringNotLike", True), ("ArnNotEquals", True),
    ("ArnNotLike", True), ("StringNotEqualsIgnoreCase", True),
    # ...IfExists: true when the key is absent, else the operator's answer.
    ("StringEqualsIfExists", True), ("ArnLikeIfExists", True), ("BoolIfExists", True),
    ("ForAnyValue:StringEquals", False), ("ForAllValues:StringEquals", True),
])
def test_a_key_absent_from_the_request(operator: str, allowed: bool) -> None:
    document = conditioned({operator: {"aws:SourceArn": TOPIC}})
    assert (evaluate(document, request()) is ALLOW) is allowed


def test_if_exists_checks_a_key_that_is_present() -> None:
    document = conditioned({"StringEqualsIfExists": {"aws:SourceAccount": OWNER}})
    assert evaluate(document, request(source_account=OWNER)) is ALLOW
    assert evaluate(document, request(source_account=STRANGER)) is NOT_APPLICABLE


def test_null_tests_whether_a_key_is_present() -> None:
    absent = conditioned({"Null": {"aws:SourceArn": "true"}})
    assert evaluate(absent, request()) is ALLOW
    assert evaluate(absent, request(source_arn=TOPIC)) is NOT_APPLICABLE
    present = conditioned({"Null": {"aws:SourceArn": False}})
    assert evaluate(present, request(source_arn=TOPIC)) is ALLOW


def test_several_keys_and_several_operators_must_all_hold() -> None:
    document = conditioned({
        "ArnEquals": {"aws:SourceArn": TOPIC},
        "StringEquals": {"aws:SourceAccount": OWNER, "aws:PrincipalAccount": OTHER},
        "Bool": {"aws:SecureTransport": "true"},
    })
    full = {"source_arn": TOPIC, "source_account": OWNER, "secure_transport": True}
    assert evaluate(document, request(**full)) is ALLOW
    for missing in full:
        partial = {k: v for k, v in full.items() if k != missing}
        assert evaluate(document, request(**partial)) is NOT_APPLICABLE, missing
    assert evaluate(document, request(STRANGER, **full)) is NOT_APPLICABLE


def test_principal_account_and_arn_are_condition_keys() -> None:
    document = conditioned({"StringEquals": {"aws:PrincipalAccount": [OTHER]},
                            "ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:root"}})
    assert evaluate(document, request(OTHER)) is ALLOW
    assert evaluate(document, request(STRANGER)) is NOT_APPLICABLE


# --- what cqs cannot evaluate fails closed ---------------------------------------------------

UNSUPPORTED = [
    {"DateLessThan": {"aws:CurrentTime": "2099-06-30T12:00Z"}},
    {"IpAddress": {"aws:SourceIp": "192.0.2.0/24"}},
    {"StringEquals": {"aws:SourceArn": {"nested": "object"}}},
    {"NotAnOperator": {"aws:SourceArn": TOPIC}},
    {"ForSomeValues:StringEquals": {"aws:SourceArn": TOPIC}},
    {"StringEquals": "not an object"},
    "not an object",
]


@pytest.mark.parametrize("condition", UNSUPPORTED)
def test_an_allow_that_cannot_be_evaluated_grants_nothing(condition: object) -> None:
    document = policy(allow(Principal="*", Action="sqs:*", Resource=QUEUE1, Condition=condition))
    assert evaluate(document, request(source_arn=TOPIC)) is NOT_APPLICABLE


@pytest.mark.parametrize("condition", UNSUPPORTED)
def test_a_deny_that_cannot_be_evaluated_still_denies(condition: object) -> None:
    document = policy(
        allow(Principal="*", Action="sqs:*", Resource=QUEUE1),
        deny(Principal="*", Action="sqs:*", Resource=QUEUE1, Condition=condition),
    )
    assert evaluate(document, request(source_arn=TOPIC)) is DENY


def test_a_deny_whose_known_parts_do_not_match_does_not_deny() -> None:
    document = policy(
        allow(Principal="*", Action="sqs:*", Resource=QUEUE1),
        deny(Principal="*", Action="sqs:PurgeQueue", Resource=QUEUE1,
             Condition={"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00Z"}}),
    )
    assert evaluate(document, request(action="SendMessage")) is ALLOW
    assert evaluate(document, request(action="PurgeQueue")) is DENY


@pytest.mark.parametrize("statement", [
    {"Effect": "Allow", "Action": "sqs:*", "Resource": QUEUE1},  # no Principal
    {"Effect": "Allow", "Principal": "*", "Resource": QUEUE1},  # no Action
    {"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "NotAction": "sqs:Purge*"},
    {"Effect": "Allow", "Principal": "*", "Action": 7},
    {"Effect": "Allow", "Principal": "*", "Action": ["sqs:*", None]},
    {"Effect": "Allow", "Principal": {"AWS": [OTHER, 5]}, "Action": "sqs:*"},
    {"Effect": "allow", "Principal": "*", "Action": "sqs:*"},
    {"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "Resource": ["*", {}]},
])
def test_malformed_allow_statements_grant_nothing(statement: dict[str, object]) -> None:
    assert evaluate(policy(statement), request()) is NOT_APPLICABLE


@pytest.mark.parametrize("text", [
    None, "", "null", "[]", '"text"', "42", "{", '{"Statement": 3}', '{"Statement": ["x", 1]}',
    '{"Statement": null}', "[" * 100_000 + "]" * 100_000, '{"Statement": [{"Effect": ' + "9" * 5000 + "}]}",
])
def test_documents_that_are_not_policies_grant_nothing(text: str | None) -> None:
    assert evaluate(text, request()) is NOT_APPLICABLE


policy_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from(["*", "sqs:*", "Allow", "Deny", OTHER, QUEUE1, "aws:SourceArn",
                       "StringLike", "ArnNotEqualsIfExists", "ForAllValues:StringEquals"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["Statement", "Effect", "Principal", "NotPrincipal", "AWS", "Action",
                         "NotAction", "Resource", "NotResource", "Condition", "Bool", "Null",
                         "StringEquals", "aws:SecureTransport"]) | st.text(max_size=8),
        children, max_size=5,
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(document=policy_values, secure=st.booleans())
def test_random_policy_documents_never_raise(document: object, secure: bool) -> None:
    decision = evaluate(json.dumps(document), request(secure_transport=secure, source_arn=TOPIC))
    assert isinstance(decision, Decision)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_random_text_never_raises(text: str) -> None:
    assert isinstance(evaluate(text, request()), Decision)


def test_wildcard_patterns_cannot_make_evaluation_slow() -> None:
    # Patterns a regex engine would backtrack on for ages; the matcher stays linear-ish.
    hostile = ["*a" * 100 + "*b", "*a" * 2000 + "*b", "?*" * 150 + "b", "*" * 10_000 + "b"]
    statements = [allow(Principal="*", Action=pattern, Resource=pattern,
                        Condition={"StringLike": {"aws:PrincipalArn": pattern}})
                  for pattern in hostile]
    subject = AccessRequest(OTHER, "a" * 200, "sqs:" + "a" * 200, "a" * 200)
    started = time.perf_counter()
    assert evaluate(policy(*statements), subject) is NOT_APPLICABLE
    assert time.perf_counter() - started < 1.0
