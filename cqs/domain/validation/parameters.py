"""The integer parameters of sends and receives: DelaySeconds, VisibilityTimeout,
MaxNumberOfMessages and WaitTimeSeconds, each within its SQS range.

Owns their ranges' error texts (the ranges themselves are in `.limits`). Pure functions:
imports `cqs.domain.errors` and `.limits` only.
"""

from __future__ import annotations

from cqs.domain.errors import InvalidParameterValue
from cqs.domain.validation.limits import (
    MAX_DELAY_SECONDS,
    MAX_NUMBER_OF_MESSAGES,
    MAX_VISIBILITY_TIMEOUT,
    MAX_WAIT_TIME_SECONDS,
)


def validate_delay_seconds(value: int) -> None:
    if not 0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidParameterValue(
            f"Value {value} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be"
            f" >= 0 and <= {MAX_DELAY_SECONDS}."
        )


def validate_visibility_timeout(value: int) -> None:
    if not 0 <= value <= MAX_VISIBILITY_TIMEOUT:
        raise InvalidParameterValue(
            f"Value {value} for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and"
            f" <= {MAX_VISIBILITY_TIMEOUT}, if provided."
        )


def validate_max_number_of_messages(value: int) -> None:
    if not 1 <= value <= MAX_NUMBER_OF_MESSAGES:
        raise InvalidParameterValue(
            f"Value {value} for parameter MaxNumberOfMessages is invalid. Reason: Must be between"
            f" 1 and {MAX_NUMBER_OF_MESSAGES}, if provided."
        )


def validate_wait_time_seconds(value: int) -> None:
    if not 0 <= value <= MAX_WAIT_TIME_SECONDS:
        raise InvalidParameterValue(
            f"Value {value} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and"
            f" <= {MAX_WAIT_TIME_SECONDS}, if provided."
        )
