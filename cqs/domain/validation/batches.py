"""Batch requests: how many entries, their ids, and the size of a send batch.

Owns the batch rules shared by SendMessageBatch, DeleteMessageBatch and
ChangeMessageVisibilityBatch, with AWS's error texts. Pure functions: imports `cqs.domain.errors`,
`.limits` and the standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cqs.domain.errors import (
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    TooManyEntriesInBatchRequest,
)
from cqs.domain.validation.limits import MAX_BATCH_ENTRIES, MAX_BATCH_ENTRY_ID_LENGTH

_BATCH_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


def validate_batch_entries(ids: Sequence[str], action: str = "SendMessageBatch") -> None:
    """One to ten entries with distinct, well-formed ids. `action` names the batch action."""
    if not ids:
        raise EmptyBatchRequest(
            f"There should be at least one {action}RequestEntry in the request."
        )
    if len(ids) > MAX_BATCH_ENTRIES:
        raise TooManyEntriesInBatchRequest(
            f"Maximum number of entries per request are {MAX_BATCH_ENTRIES}. You have sent"
            f" {len(ids)}."
        )
    seen: set[str] = set()
    for entry_id in ids:
        if not _BATCH_ENTRY_ID.fullmatch(entry_id):
            raise InvalidBatchEntryId(
                "A batch entry id can only contain alphanumeric characters, hyphens and"
                f" underscores. It can be at most {MAX_BATCH_ENTRY_ID_LENGTH} letters long."
            )
        if entry_id in seen:
            raise BatchEntryIdsNotDistinct(f"Id {entry_id} repeated.")
        seen.add(entry_id)


def validate_batch_size(total_size: int, maximum: int) -> None:
    """The entries of a send batch together may not exceed `maximum` bytes."""
    if total_size > maximum:
        raise BatchRequestTooLong(
            f"Batch requests cannot be longer than {maximum} bytes. You have sent {total_size}"
            " bytes."
        )
