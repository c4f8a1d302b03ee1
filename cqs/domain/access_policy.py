"""Queue access policies: deciding whether one request is allowed by a queue's Policy.

Owns the evaluation of the IAM access policy language as SQS queue policies use it: a
pure function from (the Policy text, one request) to ALLOW, DENY or NOT_APPLICABLE. No I/O,
no clock; imports only the standard library. The service (`cqs.service.access`) decides
what a decision means for a caller; this module only reads the document.

What is evaluated (AWS IAM policy reference, SQS policy examples):
- `Statement` as one object or a list; `Effect` Allow or Deny; an explicit Deny wins.
- `Principal` / `NotPrincipal`: "*", {"AWS": "*"}, {"AWS": "<12-digit account>"},
  {"AWS": "arn:<partition>:iam::<account>:root"}, other ARNs compared whole, lists of them;
  other principal types ("Service", "Federated", ...) name nobody cqs authenticates.
- `Action` / `NotAction`: "sqs:SendMessage", case-insensitive ("SQS:SendMessage" is what
  AddPermission writes), with `*` and `?` wildcards ("sqs:*", "sqs:Send*", "*").
- `Resource` / `NotResource`: the queue ARN, case-sensitive, `*` and `?` wildcards (a `*`
  may span colons, as IAM allows); a statement without either covers the queue it is on.
- `Condition`: StringEquals, StringNotEquals, StringEqualsIgnoreCase,
  StringNotEqualsIgnoreCase, StringLike, StringNotLike, ArnEquals, ArnLike, ArnNotEquals,
  ArnNotLike (each ARN component matched apart), Bool, Null, each with `...IfExists`, and the
  `ForAnyValue:` / `ForAllValues:` qualifiers. Keys are case-insensitive; several values of
  one key are OR (NOR for the negated operators); several keys and operators are AND. A key
  absent from the request makes a condition false, except for the negated operators, the
  `...IfExists` forms, `ForAllValues:` and `Null`, which are true then (IAM documents this).

What cannot be evaluated never grants and never lifts a Deny. A statement part that cqs
does not understand (an operator it does not implement, such as DateLessThan or IpAddress,
or a value of the wrong JSON type) counts as "unknown": an Allow statement needs every part
to match, so it grants nothing; a Deny statement applies unless some part is known not to
match. A statement whose Effect is neither "Allow" nor "Deny" is ignored, and a Policy
that is not a JSON object grants nothing and denies nothing. Evaluation
never raises and takes time linear in the document (wildcards are matched without regexes,
so no pattern can make it backtrack).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

# Batch actions are authorized as their single-message action (AWS: "the batch action
# requires the same permission as the single action").
_BATCH_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
_ACCOUNT_ID = re.compile(r"[0-9]{12}")
_ROOT_ARN = re.compile(r"arn:[a-z-]+:iam::([0-9]{12}):root")

# Three-valued: True (matches), False (does not), None (unknown: cqs cannot tell).
Match = bool | None
_Matcher = Callable[[object], Match]  # a statement element's value -> does it match
_Glob = Callable[[str, str], bool]  # (policy value, request value) -> does it match


class Decision(enum.Enum):
    ALLOW = "allow"  # an Allow statement matched and no Deny did
    DENY = "deny"  # a Deny statement matched (or may have: see the module docstring)
    NOT_APPLICABLE = "not_applicable"  # no statement matched: the policy grants nothing


@dataclass(frozen=True, slots=True)
class AccessRequest:
    """One request as a policy sees it. `action` is in policy form ("sqs:SendMessage");
    `source_account` / `source_arn` are set only for requests a service makes on behalf of
    a resource (none in cqs: direct calls have neither)."""

    principal_account: str
    principal_arn: str
    action: str
    resource: str
    secure_transport: bool = False
    source_account: str | None = None
    source_arn: str | None = None

    def condition_values(self) -> dict[str, str]:
        """The request's condition keys, lower-cased (IAM keys are case-insensitive)."""
        values = {
            "aws:principalaccount": self.principal_account,
            "aws:principalarn": self.principal_arn,
            "aws:securetransport": "true" if self.secure_transport else "false",
        }
        if self.source_account is not None:
            values["aws:sourceaccount"] = self.source_account
        if self.source_arn is not None:
            values["aws:sourcearn"] = self.source_arn
        return values


def policy_action(api_action: str) -> str:
    """The action a policy names for an SQS API action: "SendMessageBatch" -> "sqs:SendMessage"."""
    return "sqs:" + _BATCH_ACTIONS.get(api_action, api_action)


def evaluate(policy: str | None, request: AccessRequest) -> Decision:
    """What the queue Policy `policy` (its JSON text, as stored) says about `request`."""
    allowed = False
    context = request.condition_values()
    for statement in _statements(policy or ""):
        effect = statement.get("Effect")
        if effect == "Deny":
            if _statement_matches(statement, request, context) is not False:
                return Decision.DENY
        elif effect == "Allow" and not allowed:
            allowed = _statement_matches(statement, request, context) is True
    return Decision.ALLOW if allowed else Decision.NOT_APPLICABLE


# --- the document -----------------------------------------------------------------------

@lru_cache(maxsize=256)
def _statements(policy: str) -> tuple[dict[str, object], ...]:
    """The statement objects of a Policy text; () for anything that is not a policy."""
    try:
        document = json.loads(policy)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(document, dict):
        return ()
    statements = document.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list):
        return ()
    return tuple(s for s in statements if isinstance(s, dict))


def _all(results: Iterable[Match]) -> Match:
    """Kleene AND: False wins over unknown, unknown over True."""
    outcome: Match = True
    for result in results:
        if result is False:
            return False
        if result is None:
            outcome = None
    return outcome


def _negate(result: Match) -> Match:
    return None if result is None else not result


def _statement_matches(
    statement: Mapping[str, object], request: AccessRequest, context: Mapping[str, str]
) -> Match:
    return _all([
        _either(statement, "Principal", "NotPrincipal",
                lambda value: _principal_matches(value, request)),
        _either(statement, "Action", "NotAction",
                lambda value: _patterns_match(value, request.action, _action_glob)),
        _resource_matches(statement, request.resource),
        _conditions_match(statement.get("Condition"), context),
    ])


def _either(
    statement: Mapping[str, object], name: str, negated_name: str, matches: _Matcher
) -> Match:
    """An element given positively (`Action`) or negated (`NotAction`): exactly one of them."""
    if name in statement and negated_name not in statement:
        return matches(statement[name])
    if negated_name in statement and name not in statement:
        return _negate(matches(statement[negated_name]))
    return None  # neither (a policy AWS would refuse) or both


def _resource_matches(statement: Mapping[str, object], resource: str) -> Match:
    if "Resource" not in statement and "NotResource" not in statement:
        return True  # the policy is the queue's own
    return _either(
        statement, "Resource", "NotResource",
        lambda value: _patterns_match(value, resource, _glob),
    )


def _strings(value: object) -> list[str] | None:
    """A string or a list of strings as a list; None for any other JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def _patterns_match(value: object, subject: str, match: _Glob) -> Match:
    patterns = _strings(value)
    if patterns is None:
        return None
    return any(match(pattern, subject) for pattern in patterns)


def _principal_matches(value: object, request: AccessRequest) -> Match:
    if value == "*":
        return True
    if not isinstance(value, dict):
        return None
    result: Match = False
    for kind, names in value.items():
        listed = _strings(names)
        if listed is None:
            result = None if result is False else result
        elif kind == "AWS" and any(_names_caller(name, request) for name in listed):
            return True
    return result


def _names_caller(name: str, request: AccessRequest) -> bool:
    if name == "*":
        return True
    if _ACCOUNT_ID.fullmatch(name):
        return name == request.principal_account
    root = _ROOT_ARN.fullmatch(name)
    if root:
        return root.group(1) == request.principal_account
    return name == request.principal_arn


# --- conditions ---------------------------------------------------------------------------

def _conditions_match(block: object, context: Mapping[str, str]) -> Match:
    if block is None:
        return True
    if not isinstance(block, dict):
        return None
    results: list[Match] = []
    for operator, keys in block.items():
        if not isinstance(keys, dict):
            results.append(None)
            continue
        for key, values in keys.items():
            results.append(_condition_matches(operator, key, values, context))
    return _all(results)


def _condition_values(values: object) -> list[str] | None:
    """Policy values as strings (JSON booleans and numbers as their text); None if unreadable."""
    items = values if isinstance(values, list) else [values]
    texts: list[str] = []
    for item in items:
        if isinstance(item, bool):
            texts.append("true" if item else "false")
        elif isinstance(item, (str, int, float)):
            texts.append(str(item))
        else:
            return None
    return texts


def _condition_matches(
    operator: str, key: str, values: object, context: Mapping[str, str]
) -> Match:
    qualifier, _, base = operator.rpartition(":")
    if qualifier not in ("", "ForAnyValue", "ForAllValues"):
        return None
    if_exists = base.endswith("IfExists") and base != "IfExists"
    if if_exists:
        base = base.removesuffix("IfExists")
    expected = _condition_values(values)
    if expected is None:
        return None
    present = context.get(key.lower())
    if base == "Null":
        if if_exists or qualifier or len(expected) != 1 or expected[0].lower() not in (
            "true", "false"
        ):
            return None
        return (present is None) == (expected[0].lower() == "true")
    comparison = _COMPARISONS.get(base)
    if comparison is None:
        return None
    compare, negated = comparison
    if present is None:
        if qualifier == "ForAnyValue":
            return False
        return if_exists or negated or qualifier == "ForAllValues"
    # The request's keys are single-valued, so both qualifiers test that one value.
    matched = any(compare(pattern, present) for pattern in expected)
    return not matched if negated else matched


# --- wildcards ----------------------------------------------------------------------------

def _glob(pattern: str, subject: str) -> bool:
    """`*` matches any run of characters, `?` any one; case-sensitive. Greedy matching that
    remembers only the last `*`: O(len(pattern) * len(subject)) at worst, never exponential."""
    if len(pattern) - pattern.count("*") > len(subject):
        return False  # more characters to match than the subject has
    p = s = 0
    star = -1
    resume = 0
    while s < len(subject):
        if p < len(pattern) and pattern[p] == "*":
            star, resume = p, s
            p += 1
        elif p < len(pattern) and pattern[p] in ("?", subject[s]):
            p += 1
            s += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            s = resume
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _action_glob(pattern: str, action: str) -> bool:
    return _glob(pattern.lower(), action.lower())


def _arn_glob(pattern: str, arn: str) -> bool:
    """ArnLike: each of the six colon-separated components matched on its own, so `*` does
    not span colons (a pattern without any colon, such as "*", is matched whole)."""
    if ":" not in pattern:
        return _glob(pattern, arn)
    pattern_parts = pattern.split(":", 5)
    arn_parts = arn.split(":", 5)
    return len(pattern_parts) == len(arn_parts) == 6 and all(
        map(_glob, pattern_parts, arn_parts)
    )


def _equals(expected: str, actual: str) -> bool:
    return expected == actual


def _equals_ignoring_case(expected: str, actual: str) -> bool:
    return expected.lower() == actual.lower()


def _bool_equals(expected: str, actual: str) -> bool:
    return expected.lower() == actual.lower()


# operator (without IfExists) -> (comparison of a policy value with the request's, negated)
_COMPARISONS: dict[str, tuple[_Glob, bool]] = {
    "StringEquals": (_equals, False),
    "StringNotEquals": (_equals, True),
    "StringEqualsIgnoreCase": (_equals_ignoring_case, False),
    "StringNotEqualsIgnoreCase": (_equals_ignoring_case, True),
    "StringLike": (_glob, False),
    "StringNotLike": (_glob, True),
    # IAM documents ArnEquals and ArnLike alike: both take wildcards.
    "ArnEquals": (_arn_glob, False),
    "ArnLike": (_arn_glob, False),
    "ArnNotEquals": (_arn_glob, True),
    "ArnNotLike": (_arn_glob, True),
    "Bool": (_bool_equals, False),
}
