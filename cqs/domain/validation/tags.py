"""Queue tags: key and value lengths, their characters, and how many a queue may hold.

Owns the rules of CreateQueue's tags, TagQueue and UntagQueue, with AWS's error texts. Pure
functions: imports `cqs.domain.errors`, the other `cqs.domain.validation` modules and the standard
library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cqs.domain.errors import InvalidParameterValue, MissingParameter, TooManyTags
from cqs.domain.validation.limits import (
    MAX_TAG_KEY_LENGTH,
    MAX_TAG_VALUE_LENGTH,
    MAX_TAGS_PER_QUEUE,
)
from cqs.domain.validation.text import validate_text


def validate_tags(
    tags: Mapping[str, str], existing_keys: Iterable[str] = (), queue_name: str = ""
) -> None:
    """Keys of 1-128 characters, values of 0-256, and at most 50 tags on the queue afterwards.

    Keys and values hold only the characters SQS allows in message bodies (anything else
    would come back altered in XML). `existing_keys` are the queue's current tag keys;
    re-tagging one of them replaces it.
    """
    for key, value in tags.items():
        _validate_tag_key(key)
        if len(value) > MAX_TAG_VALUE_LENGTH:
            raise InvalidParameterValue(
                f"Tag values must be between 0 and {MAX_TAG_VALUE_LENGTH} characters in length."
            )
        validate_text(value, "Tags")
    if len(set(existing_keys) | set(tags)) > MAX_TAGS_PER_QUEUE:
        raise TooManyTags(f"Too many tags added for queue {queue_name}.")


def validate_tags_given(tags: Mapping[str, str]) -> None:
    """TagQueue needs at least one tag (CreateQueue may have none)."""
    if not tags:
        raise MissingParameter("The request must contain the parameter Tags.")


def validate_tag_keys(keys: Sequence[str]) -> None:
    """UntagQueue's keys: at least one, each 1-128 characters. No key at all is answered
    as SQS does, with the key-length message."""
    if not keys:
        raise _key_length_error()
    for key in keys:
        _validate_tag_key(key)


def _validate_tag_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_TAG_KEY_LENGTH:
        raise _key_length_error()
    validate_text(key, "TagKey")


def _key_length_error() -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Tag keys must be between 1 and {MAX_TAG_KEY_LENGTH} characters in length."
    )
