"""The integer parameters of sends and receives: DelaySeconds, VisibilityTimeout,
MaxNumberOfMessages and WaitTimeSeconds, each within its SQS range.

Owns their ranges' error texts (the ranges themselves are in `.limits`). Pure functions:
imports `cqs.domain.errors` and `.limits` only.
"""

from __future__ import annotations

import functools

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.validation.limits import (
    MAX_DELAY_SECONDS,
    MAX_NUMBER_OF_MESSAGES,
    MAX_VISIBILITY_TIMEOUT,
    MAX_WAIT_TIME_SECONDS,
)

# parameter -> (lowest, highest, SQS's reason when the value is outside the two)
_RANGES: dict[str, tuple[int, int, str]] = {
    "DelaySeconds": (0, MAX_DELAY_SECONDS, "DelaySeconds must be >= 0 and <= {highest}."),
    "VisibilityTimeout": (0, MAX_VISIBILITY_TIMEOUT, "Must be >= 0 and <= {highest}, if provided."),
    "MaxNumberOfMessages": (1, MAX_NUMBER_OF_MESSAGES, "Must be between 1 and {highest}, if provided."),
    "WaitTimeSeconds": (0, MAX_WAIT_TIME_SECONDS, "Must be >= 0 and <= {highest}, if provided."),
}


def validate_in_range(parameter: str, value: int) -> None:
    """InvalidParameterValue, in SQS's words, unless `value` is within the parameter's range."""
    lowest, highest, reason = _RANGES[parameter]
    if not lowest <= value <= highest:
        raise InvalidParameterValue(
            f"Value {value} for parameter {parameter} is invalid. Reason: "
            + reason.format(highest=highest)
        )


validate_delay_seconds = functools.partial(validate_in_range, "DelaySeconds")
validate_visibility_timeout = functools.partial(validate_in_range, "VisibilityTimeout")
validate_max_number_of_messages = functools.partial(validate_in_range, "MaxNumberOfMessages")
validate_wait_time_seconds = functools.partial(validate_in_range, "WaitTimeSeconds")
