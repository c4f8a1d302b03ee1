"""Consumer group names, and the queue name a group goes by: `<queue>/<group>`.

Owns the group name rule (as a queue name's: 1 to 80 letters, digits, hyphens and
underscores) and the one place that joins and splits `<queue>/<group>`. A group is stored
and served as a queue of that name; no queue CreateQueue accepts has a slash in its name,
so the two never collide, and the name's URL `<base>/<account>/<queue>/<group>` is the
queue URL with one more path segment. Pure: imports `cqs.domain.errors` and `cqs.domain.validation`.
"""

from __future__ import annotations

import re

from cqs.domain import validation
from cqs.domain.errors import InvalidParameterValue

SEPARATOR = "/"
_GROUP_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")


def validate_group_name(name: object) -> str:
    if not isinstance(name, str) or _GROUP_NAME.fullmatch(name) is None:
        raise InvalidParameterValue(
            "GroupName can only include alphanumeric characters, hyphens, or underscores."
            " 1 to 80 in length"
        )
    return name


def group_queue_name(queue_name: str, group_name: str) -> str:
    return f"{queue_name}{SEPARATOR}{group_name}"


def split_group_queue_name(name: str) -> tuple[str, str] | None:
    """(queue name, group name) of a group's queue name; None for a queue's own name."""
    queue_name, separator, group_name = name.partition(SEPARATOR)
    return (queue_name, group_name) if separator else None


def is_group_queue_name(name: str) -> bool:
    """Whether `name` is one a consumer group can go by (`<queue>/<group>`)."""
    parts = split_group_queue_name(name)
    return (
        parts is not None
        and validation.is_possible_queue_name(parts[0])
        and _GROUP_NAME.fullmatch(parts[1]) is not None
    )
