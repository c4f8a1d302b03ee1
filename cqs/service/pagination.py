"""Pages of queue names for ListQueues and ListDeadLetterSourceQueues.

Owns MaxResults' limits, the NextToken text (the last name of a page, URL-safe base64) and
cutting a sorted list of names into a page. Pure: imports only errors and the standard
library.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from cqs.domain.errors import InvalidParameterValue

LIST_QUEUES_LIMIT = 1000  # names in a page, and in an answer without MaxResults


def check_max_results(max_results: int | None) -> None:
    if max_results is not None and not 1 <= max_results <= LIST_QUEUES_LIMIT:
        raise InvalidParameterValue(
            f"Value {max_results} for parameter MaxResults is invalid. "
            "Reason: MaxResults must be an integer between 1 and 1000."
        )


def name_token(name: str) -> str:
    """The NextToken of a page that ends with `name`."""
    return base64.urlsafe_b64encode(name.encode()).decode()


def read_name_token(token: str) -> str:
    """The name a NextToken continues after; InvalidParameterValue when it is not one."""
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidParameterValue("Invalid NextToken value.") from exc


def page(
    names: Sequence[str], max_results: int | None, after: str | None
) -> tuple[list[str], str | None]:
    """The sorted `names` after `after`: all of them (up to the limit, no token) without
    MaxResults, else `max_results` of them and a token when more follow."""
    remaining = [n for n in names if n > after] if after is not None else list(names)
    if max_results is None:
        return remaining[:LIST_QUEUES_LIMIT], None
    chosen = remaining[:max_results]
    more = len(remaining) > max_results
    return chosen, name_token(chosen[-1]) if more else None
