"""Mutations of valid SQS parameters and of their encodings, as Hypothesis strategies.

Owns what the fuzzer does to a request's content: on a JSON tree, missing required members,
unknown members, values of the wrong type or of nested garbage, huge values, lone surrogates
and control characters, anywhere in the tree; on the query protocol's name/value pairs,
dropped, repeated, empty and misnumbered names, wrong-typed and huge values; and the broken
encodings of each: JSON truncated, of the wrong top-level type, with duplicate keys, invalid
UTF-8 or NaN, or XML or a form in its place; forms with `%zz`, `&&&`, non-UTF-8 escapes.
Each mutation returns a short label for reports.

Imports hypothesis, `fuzz_model` and the standard library; never cqs.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from tests.wire.fuzz_model import (
    CONTROL_TEXT,
    LONE_SURROGATES,
    garbage_json,
    huge_values,
    short_text,
)

MUTATION_COUNTS = st.sampled_from([0, 0, 0, 1, 1, 1, 2, 3])
_WRONG_TYPES: list[Any] = [
    "abc", "", "1.5", 1.5, -1, 2**64, True, False, None, [], [1], ["a"], {}, {"a": "b"},
    [[[[]]]], {"a": {"b": {"c": [None]}}}, "9" * 50,
]
XML_BODY = b'<?xml version="1.0"?><SendMessage><QueueUrl>x</QueueUrl></SendMessage>'
XML_BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
    b"<l>&b;&b;&b;</l>"
)


# --- JSON trees -------------------------------------------------------------------------------

Path = tuple[str | int, ...]


def _paths(tree: Any, prefix: Path = ()) -> list[Path]:
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree[:20]):
            found += _paths(value, (*prefix, index))
    return found


def _at(tree: Any, path: Path) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _wrong_type_for(value: Any) -> st.SearchStrategy[Any]:
    other = [item for item in _WRONG_TYPES if type(item) is not type(value)]
    # copies: a later mutation changes the tree in place, never the samples themselves
    return st.sampled_from(other).map(copy.deepcopy) | garbage_json


def _with_text(value: Any, insert: str, at: int) -> str:
    text = value if isinstance(value, str) else "x"
    at = min(at, len(text))
    return text[:at] + insert + text[at:]


@st.composite
def mutated_tree(draw: st.DrawFn, tree: dict[str, Any]) -> tuple[Any, str]:
    """`tree` with 0 to 3 mutations anywhere in it, and their labels."""
    labels: list[str] = []
    for _ in range(draw(MUTATION_COUNTS)):
        path = draw(st.sampled_from(_paths(tree)))
        how = draw(st.sampled_from(
            ["drop", "extra", "wrong_type", "wrong_type", "huge", "surrogate", "control",
             "garbage"]))
        labels.append(f"{how}@{'.'.join(map(str, path)) or 'root'}")
        if not path:  # the root itself
            if how in ("drop", "extra"):
                tree = {**tree, draw(short_text): draw(garbage_json)}
            else:
                return draw(_wrong_type_for(tree)), "+".join(labels)
            continue
        parent, key = _at(tree, path[:-1]), path[-1]
        value = parent[key]
        if how == "drop":
            del parent[key]
        elif how == "extra" and isinstance(value, dict):
            value[draw(short_text | st.sampled_from(["QueueUrl", "__type", ""]))] = draw(
                garbage_json)
        elif how == "huge":
            parent[key] = draw(huge_values)
        elif how == "surrogate":
            parent[key] = _with_text(value, draw(st.sampled_from(LONE_SURROGATES)),
                                     draw(st.integers(0, 30)))
        elif how == "control":
            parent[key] = _with_text(value, draw(st.sampled_from(CONTROL_TEXT)),
                                     draw(st.integers(0, 30)))
        elif how == "garbage":
            parent[key] = draw(garbage_json)
        else:
            parent[key] = draw(_wrong_type_for(value))
        if isinstance(parent, dict) and how == "surrogate" and draw(st.booleans()):
            parent[_with_text(str(key), "\udc80", 1)] = parent.pop(key)  # in a member name
    return tree, "+".join(labels)


def _dumps(value: Any, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def json_body(draw: st.DrawFn, tree: Any) -> tuple[bytes, str]:
    """The JSON body of `tree`, well encoded or broken in one way; and that way's label."""
    how = draw(st.sampled_from(
        ["plain"] * 12 + ["raw_utf8", "truncated", "top_level",
         "duplicate_keys", "invalid_utf8", "bom", "trailing", "non_finite", "empty", "xml",
         "form", "big_int"]))
    body = _dumps(tree, ascii_only=how != "raw_utf8")
    if how == "truncated":
        body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif how == "top_level":
        body = _dumps(draw(st.sampled_from([[tree], "s", 1, None, True, []])), True)
    elif how == "duplicate_keys" and isinstance(tree, dict) and tree:
        key = draw(st.sampled_from(sorted(tree, key=str)))
        body = b"{" + _dumps(key, True) + b": " + _dumps(draw(garbage_json), True) + b", " + (
            body[1:] if body.startswith(b"{") and len(body) > 2 else b"}")
    elif how == "invalid_utf8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                    b"\x80"]))
        quote_at = [match.end() for match in re.finditer(rb'"', body)] or [len(body)]
        at = draw(st.sampled_from(quote_at))
        body = body[:at] + bad + body[at:]
    elif how == "bom":
        body = b"\xef\xbb\xbf" + body
    elif how == "trailing":
        body += draw(st.sampled_from([b"}", b"garbage", b"\x00", b" {}"]))
    elif how == "non_finite":
        body = re.sub(rb": (-?[0-9]+)", lambda _: b": " + draw(st.sampled_from(
            [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-0", b"1E400"])), body, count=1)
    elif how == "big_int":
        body = re.sub(rb": (-?[0-9]+)", b": " + b"9" * draw(st.sampled_from([30, 5000])),
                      body, count=1)
    elif how == "empty":
        body = draw(st.sampled_from([b"", b"  \n", b"{}", b"null"]))
    elif how == "xml":
        body = draw(st.sampled_from([XML_BODY, XML_BOMB]))
    elif how == "form":
        body = b"Action=ListQueues&Version=2012-11-05"
    return body, how


# --- query pairs ------------------------------------------------------------------------------

_INDEXED = re.compile(r"\.([0-9]+)(?=\.|$)")


@st.composite
def mutated_pairs(
    draw: st.DrawFn, pairs: list[tuple[str, str]]
) -> tuple[list[tuple[str, str]], str]:
    labels: list[str] = []
    for _ in range(draw(MUTATION_COUNTS)):
        how = draw(st.sampled_from(
            ["drop", "extra", "repeat", "empty_name", "wrong_type", "huge", "index", "control",
             "many", "no_value"]))
        labels.append(how)
        at = draw(st.integers(0, max(0, len(pairs) - 1)))
        name, value = pairs[at] if pairs else ("Action", "ListQueues")
        if how == "drop" and pairs:
            del pairs[at]
        elif how == "extra":
            pairs.insert(at, (draw(short_text), draw(short_text)))
        elif how == "repeat":
            pairs.insert(at, (name, draw(st.just(value) | short_text)))
        elif how == "empty_name":
            pairs.insert(at, ("", draw(short_text)))
        elif how == "wrong_type":
            pairs[at:at + 1] = [(name, draw(st.sampled_from(
                ["abc", "", "1.5", "-1", "0x10", "true", "[]", "{}", "9" * 30, " "])))]
        elif how == "huge":
            pairs[at:at + 1] = [(name, draw(huge_values.filter(lambda v: isinstance(v, str))))]
        elif how == "index":
            new_index = draw(st.sampled_from(["0", "-1", "a", "", "99999999999999999999999",
                                              "01", "1.1", "2147483648"]))
            pairs[at:at + 1] = [(_INDEXED.sub(f".{new_index}", name, count=1), value)]
        elif how == "control":
            pairs[at:at + 1] = [(name, value + draw(st.sampled_from(CONTROL_TEXT)))]
        elif how == "many":
            pairs += [(f"Attribute.{n}.Name", "x") for n in range(1, draw(
                st.sampled_from([50, 2_000])))]
        elif how == "no_value":
            pairs[at:at + 1] = [(name, "\0no-equals\0")]
    return pairs, "+".join(labels)


def _escape(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def encode_pairs(pairs: list[tuple[str, str]]) -> str:
    return "&".join(
        _escape(name) if value == "\0no-equals\0" else f"{_escape(name)}={_escape(value)}"
        for name, value in pairs
    )


@st.composite
def broken_form(draw: st.DrawFn, form: str) -> tuple[str, str]:
    """`form` as sent, or with a syntax error spliced in; and the label of what was done."""
    how = draw(st.sampled_from(
        ["plain"] * 6 + ["ampersands", "bad_escape", "non_utf8", "equals", "plus", "raw"]))
    splice = {
        "ampersands": "&&&",
        "bad_escape": draw(st.sampled_from(["%zz", "%", "%4", "a=%g0", "%%"])),
        "non_utf8": draw(st.sampled_from(["x=%ff", "%c3%28=1", "x=%ed%a0%80", "x=%80%80"])),
        "equals": draw(st.sampled_from(["==", "=", "a==b", "=&="])),
        "plus": "Action+=+x",
        # not percent-encoded: UTF-8, a byte that is not UTF-8 (as a surrogate escape), a space
        "raw": draw(st.sampled_from(["x=\u00e9", "x=\udcff", "\udcfe=1", "x=a b", "x=\t"])),
    }.get(how)
    if splice is None:
        return form, how
    cuts = [0, len(form)] + [match.start() for match in re.finditer("&", form)]
    at = draw(st.sampled_from(cuts))
    return form[:at] + "&" + splice + "&" + form[at:], how
