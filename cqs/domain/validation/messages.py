"""Message content: the body, message and system attributes, and the size SQS counts.

Owns the rules for what a message carries (attribute names, data types, Number values,
AWSTraceHeader), how its size is counted against MaximumMessageSize, and which attributes
ReceiveMessage's MessageAttributeNames select; with AWS's error texts. Pure functions:
imports `cqs.domain.model`, `cqs.domain.errors`, the other `cqs.domain.validation` modules and the standard
library only.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Mapping, Sequence

from cqs.domain.errors import (
    InvalidMessageContents,
    InvalidParameterValue,
    MessageTooLong,
    MissingParameter,
)
from cqs.domain.model import MessageAttributeValue
from cqs.domain.validation.limits import (
    MAX_ATTRIBUTE_NAME_LENGTH,
    MAX_ATTRIBUTE_TYPE_LENGTH,
    MAX_MESSAGE_ATTRIBUTES,
    MAX_NUMBER_PRECISION,
)
from cqs.domain.validation.text import INVALID_CHARACTERS_MESSAGE, is_sqs_text

MESSAGE_SYSTEM_ATTRIBUTE_NAMES = frozenset({"AWSTraceHeader"})

# Letters and digits in the Unicode sense (AWS accepts "attr.1øßä"), `_`, `-` and `.`.
_ATTRIBUTE_NAME = re.compile(r"[\w.-]+")
_RESERVED_ATTRIBUTE_PREFIX = re.compile(r"(aws|amazon)\.", re.IGNORECASE)
_ATTRIBUTE_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.\S+)?")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NUMBER_LIMITS = (decimal.Decimal("1e-128"), decimal.Decimal("1e126"))


def validate_message_body(body: str | None) -> None:
    """A body is at least one character, all of them in the SQS character set."""
    if not body:
        raise MissingParameter("The request must contain the parameter MessageBody.")
    if not is_sqs_text(body):
        raise InvalidMessageContents(INVALID_CHARACTERS_MESSAGE)


def validate_message_attributes(attributes: Mapping[str, MessageAttributeValue]) -> None:
    """At most ten attributes, each with a valid name, data type and value."""
    if len(attributes) > MAX_MESSAGE_ATTRIBUTES:
        raise InvalidParameterValue(
            f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum"
            f" [{MAX_MESSAGE_ATTRIBUTES}]."
        )
    for name, value in attributes.items():
        _validate_attribute_name(name)
        _validate_attribute_value(name, value)


def _validate_attribute_name(name: str) -> None:
    if len(name) > MAX_ATTRIBUTE_NAME_LENGTH:
        raise InvalidParameterValue(
            f"Message (user) attribute name must be at most {MAX_ATTRIBUTE_NAME_LENGTH}"
            " characters long."
        )
    if not _ATTRIBUTE_NAME.fullmatch(name):
        raise InvalidParameterValue(
            f"The message attribute name '{name}' is invalid. Attribute name can contain A-Z,"
            " a-z, 0-9, underscore (_), hyphen (-), and period (.) characters."
        )
    if _RESERVED_ATTRIBUTE_PREFIX.match(name) or name.startswith(".") or name.endswith("."):
        raise InvalidParameterValue(
            "You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. These"
            " strings are reserved for internal use. Additionally, they cannot start or end"
            " with '.'."
        )
    if ".." in name:
        raise InvalidParameterValue(
            f"The message attribute name '{name}' is invalid. Attribute name cannot contain"
            " two consecutive periods."
        )


def _validate_attribute_value(name: str, value: MessageAttributeValue) -> None:
    data_type = value.data_type
    if not data_type:
        raise InvalidParameterValue(
            f"The message attribute '{name}' must contain non-empty message attribute type."
        )
    if len(data_type) > MAX_ATTRIBUTE_TYPE_LENGTH:
        raise InvalidParameterValue(
            f"The type of message attribute '{name}' must be at most"
            f" {MAX_ATTRIBUTE_TYPE_LENGTH} characters long."
        )
    type_match = _ATTRIBUTE_DATA_TYPE.fullmatch(data_type)
    if type_match is None or not is_sqs_text(data_type):
        raise InvalidParameterValue(
            f"The message attribute '{name}' has an invalid message attribute type, the set of"
            " supported type prefixes is Binary, Number, and String."
        )
    base_type = type_match.group(1)
    if base_type == "Binary":
        if value.string_value is not None:
            raise _wrong_value_field(name, data_type, "Binary")
        if not value.binary_value:
            raise _empty_attribute_value(name, data_type)
        return
    if value.binary_value is not None:
        raise _wrong_value_field(name, data_type, "String")
    if not value.string_value:
        raise _empty_attribute_value(name, data_type)
    if not is_sqs_text(value.string_value):
        raise InvalidParameterValue(INVALID_CHARACTERS_MESSAGE)
    if base_type == "Number":
        _validate_number(name, value.string_value)


def _wrong_value_field(name: str, data_type: str, field: str) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"The message attribute '{name}' with type '{data_type}' must use field '{field}'."
    )


def _empty_attribute_value(name: str, data_type: str) -> InvalidParameterValue:
    return InvalidParameterValue(  # AWS's words, as recorded against SQS
        f"Message (user) attribute '{name}' must contain a non-empty value of type"
        f" '{data_type}'."
    )


def _validate_number(name: str, text: str) -> None:
    """SQS numbers: up to 38 significant digits, magnitude between 10^-128 and 10^126 (or 0)."""
    if not _NUMBER.fullmatch(text):
        raise InvalidParameterValue(f"Could not cast message attribute '{name}' value to number.")
    number = decimal.Decimal(text)
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    low, high = _NUMBER_LIMITS
    out_of_range = number != 0 and not low <= number.copy_abs() <= high
    if len(digits) > MAX_NUMBER_PRECISION or out_of_range:
        raise InvalidParameterValue(
            f"Value {text} for message attribute '{name}' of type 'Number' is invalid. Reason:"
            f" a number has at most {MAX_NUMBER_PRECISION} digits of precision and lies"
            " between 10^-128 and 10^126."
        )


def validate_message_system_attributes(attributes: Mapping[str, MessageAttributeValue]) -> None:
    """Only AWSTraceHeader, a non-empty String."""
    for name, value in attributes.items():
        if name not in MESSAGE_SYSTEM_ATTRIBUTE_NAMES:
            raise InvalidParameterValue(
                f"Message system attribute name '{name}' is invalid. The only supported message"
                " system attribute is AWSTraceHeader."
            )
        if value.data_type != "String":
            raise InvalidParameterValue(
                f"Message system attribute '{name}' has an invalid data type"
                f" '{value.data_type}'; its type must be String."
            )
        if value.binary_value is not None:
            raise _wrong_value_field(name, value.data_type, "String")
        if not value.string_value:
            raise _empty_attribute_value(name, value.data_type)
        if not is_sqs_text(value.string_value):
            raise InvalidParameterValue(INVALID_CHARACTERS_MESSAGE)


def message_size(body: str, attributes: Mapping[str, MessageAttributeValue]) -> int:
    """Bytes SQS counts against MaximumMessageSize: body plus each attribute's name, type and value.

    System attributes do not count. Counted before the characters are checked (a batch
    over the limit fails whole), so a lone surrogate counts as its three bytes, not a crash.
    """
    size = _utf8_length(body)
    for name, value in attributes.items():
        size += _utf8_length(name) + _utf8_length(value.data_type)
        if value.string_value is not None:
            size += _utf8_length(value.string_value)
        if value.binary_value is not None:
            size += len(value.binary_value)
    return size


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def validate_message_size(size: int, maximum: int) -> None:
    if size > maximum:
        raise MessageTooLong(
            f"One or more parameters are invalid. Reason: Message must be shorter than {maximum}"
            " bytes."
        )


# What selects every attribute: `All` as documented, `.*` as documented for message
# attributes, and `*`, which SQS also honours (LocalStack recorded it against SQS).
_SELECT_ALL = frozenset({"All", ".*", "*"})


def message_attribute_selected(name: str, requested: Sequence[str]) -> bool:
    """Whether ReceiveMessage's attribute names (MessageAttributeNames, or the system
    attribute names) ask for the attribute `name`.

    `All`, `.*` and `*` select everything; `prefix.*` selects the names that start with
    `prefix` (so `Custom.*` selects `Custom.a` and `Customer`, as SQS does); anything else
    must equal the name, case included. Names that match nothing are ignored, not refused.
    """
    for pattern in requested:
        if pattern in _SELECT_ALL or pattern == name:
            return True
        if pattern.endswith(".*") and name.startswith(pattern[:-2]):
            return True
    return False
