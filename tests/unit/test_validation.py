"""SQS request rules: each limit at its boundary, and the error a client sees past it."""

from __future__ import annotations

import json

import pytest

from cqs.domain import errors
from cqs.domain.model import MessageAttributeValue
from cqs.domain.validation import (
    READABLE_QUEUE_ATTRIBUTES,
    message_attribute_selected,
    message_size,
    normalize_queue_attributes,
    validate_attribute_names_for_get,
    validate_batch_entries,
    validate_batch_size,
    validate_delay_seconds,
    validate_fifo_identifier,
    validate_fifo_send,
    validate_max_number_of_messages,
    validate_message_attributes,
    validate_message_body,
    validate_message_size,
    validate_message_system_attributes,
    validate_queue_name,
    validate_queue_type_attributes,
    validate_tag_keys,
    validate_tags,
    validate_visibility_timeout,
    validate_wait_time_seconds,
)


def string(value: str | None, data_type: str = "String") -> MessageAttributeValue:
    return MessageAttributeValue(data_type=data_type, string_value=value)


def binary(value: bytes | None, data_type: str = "Binary") -> MessageAttributeValue:
    return MessageAttributeValue(data_type=data_type, binary_value=value)


# --- queue names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a", "Q", "0", "orders", "my-queue_2", "A" * 80, "-", "_", "x" * 79 + "9"]
)
def test_standard_queue_names_of_1_to_80_allowed_characters_are_accepted(name: str) -> None:
    validate_queue_name(name)


@pytest.mark.parametrize(
    "name", ["", "A" * 81, "has space", "dot.name", "slash/name", "ünïcode", "tab\t", "q.fifo"]
)
def test_other_standard_queue_names_are_refused(name: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_queue_name(name)
    assert raised.value.message == (
        "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
    )


@pytest.mark.parametrize("name", ["a.fifo", "orders-1_x.fifo", "A" * 75 + ".fifo"])
def test_fifo_queue_names_ending_in_fifo_are_accepted(name: str) -> None:
    validate_queue_name(name, fifo=True)


@pytest.mark.parametrize("name", ["orders", ".fifo", "A" * 76 + ".fifo", "a b.fifo", "a.FIFO"])
def test_other_fifo_queue_names_are_refused(name: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_queue_name(name, fifo=True)
    assert "must end with .fifo suffix and be 1 to 80 in length" in raised.value.message


# --- queue attributes ---------------------------------------------------------------------

INTEGER_RANGES = [
    ("DelaySeconds", 0, 900),
    ("MaximumMessageSize", 1024, 1_048_576),
    ("MessageRetentionPeriod", 60, 1_209_600),
    ("ReceiveMessageWaitTimeSeconds", 0, 20),
    ("VisibilityTimeout", 0, 43_200),
    ("KmsDataKeyReusePeriodSeconds", 60, 86_400),
]


@pytest.mark.parametrize(("name", "low", "high"), INTEGER_RANGES)
def test_integer_queue_attributes_accept_both_ends_of_their_range(
    name: str, low: int, high: int
) -> None:
    assert normalize_queue_attributes({name: str(low)}, creating=True) == {name: str(low)}
    assert normalize_queue_attributes({name: str(high)}, creating=False) == {name: str(high)}


@pytest.mark.parametrize(("name", "low", "high"), INTEGER_RANGES)
def test_integer_queue_attributes_refuse_values_just_outside_their_range(
    name: str, low: int, high: int
) -> None:
    for value in (low - 1, high + 1):
        with pytest.raises(errors.InvalidAttributeValue) as raised:
            normalize_queue_attributes({name: str(value)}, creating=True)
        assert raised.value.message == f"Invalid value for the parameter {name}."


@pytest.mark.parametrize(
    "value", ["", " 30", "30 ", "+30", "3.0", "30s", "0x1e", "1e1", "٣٠", "thirty", "3_0"]
)
def test_integer_queue_attributes_must_be_plain_decimal(value: str) -> None:
    with pytest.raises(errors.InvalidAttributeValue):
        normalize_queue_attributes({"VisibilityTimeout": value}, creating=True)


def test_integer_queue_attributes_are_stored_without_leading_zeros() -> None:
    assert normalize_queue_attributes({"VisibilityTimeout": "0030"}, creating=True) == {
        "VisibilityTimeout": "30"
    }


def test_boolean_queue_attributes_accept_true_and_false_in_any_case() -> None:
    attributes = {"SqsManagedSseEnabled": "TRUE", "ContentBasedDeduplication": "False"}
    assert normalize_queue_attributes(attributes, creating=False) == {
        "SqsManagedSseEnabled": "true",
        "ContentBasedDeduplication": "false",
    }


@pytest.mark.parametrize("value", ["", "yes", "1", "0", "truee"])
def test_boolean_queue_attributes_refuse_other_values(value: str) -> None:
    with pytest.raises(errors.InvalidAttributeValue) as raised:
        normalize_queue_attributes({"SqsManagedSseEnabled": value}, creating=True)
    assert raised.value.message == "Invalid value for the parameter SqsManagedSseEnabled."


def test_fifo_queue_attribute_is_accepted_when_creating() -> None:
    assert normalize_queue_attributes({"FifoQueue": "true"}, creating=True) == {"FifoQueue": "true"}
    assert normalize_queue_attributes({"FifoQueue": "false"}, creating=True) == {
        "FifoQueue": "false"
    }


def test_fifo_queue_attribute_cannot_be_set_on_an_existing_queue() -> None:
    with pytest.raises(errors.InvalidAttributeName) as raised:
        normalize_queue_attributes({"FifoQueue": "true"}, creating=False)
    assert raised.value.message == "Unknown Attribute FifoQueue."


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("DeduplicationScope", ["messageGroup", "queue"], ["", "MessageGroup", "group"]),
        ("FifoThroughputLimit", ["perQueue", "perMessageGroupId"], ["", "perqueue", "perGroup"]),
    ],
)
def test_fifo_throughput_attributes_take_only_their_documented_values(
    name: str, good: list[str], bad: list[str]
) -> None:
    for value in good:
        assert normalize_queue_attributes({name: value}, creating=False) == {name: value}
    for value in bad:
        with pytest.raises(errors.InvalidAttributeValue):
            normalize_queue_attributes({name: value}, creating=False)


@pytest.mark.parametrize(
    "name",
    ["Bogus", "", "visibilitytimeout", "All", "QueueArn", "ApproximateNumberOfMessages"],
)
def test_unknown_or_read_only_queue_attributes_cannot_be_set(name: str) -> None:
    with pytest.raises(errors.InvalidAttributeName) as raised:
        normalize_queue_attributes({name: "1"}, creating=True)
    assert raised.value.message == f"Unknown Attribute {name}."


def test_policy_is_stored_as_given_when_it_is_a_json_object() -> None:
    policy = '{"Version": "2012-10-17", "Statement": []}'
    assert normalize_queue_attributes({"Policy": policy}, creating=True) == {"Policy": policy}
    assert normalize_queue_attributes({"Policy": ""}, creating=False) == {"Policy": ""}


@pytest.mark.parametrize("policy", ["{", "[]", '"text"', "42", "null", "not json"])
def test_policy_that_is_not_a_json_object_is_refused(policy: str) -> None:
    with pytest.raises(errors.InvalidAttributeValue) as raised:
        normalize_queue_attributes({"Policy": policy}, creating=True)
    assert raised.value.message == "Invalid value for the parameter Policy."


@pytest.mark.parametrize("count", [1, 1000, "5"])
def test_redrive_policy_with_a_target_and_receive_count_is_kept_in_compact_form(
    count: object,
) -> None:
    policy = json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dlq", "maxReceiveCount": count}
    )
    assert normalize_queue_attributes({"RedrivePolicy": policy}, creating=True) == {
        "RedrivePolicy": '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq",'
        f'"maxReceiveCount":{int(str(count))}}}'
    }


@pytest.mark.parametrize("count", [0, 1001, -1, "ten", 2.5, True, None])
def test_redrive_policy_with_receive_count_outside_1_to_1000_is_refused(count: object) -> None:
    policy = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:r:1:dlq", "maxReceiveCount": count})
    with pytest.raises(errors.InvalidParameterValue) as raised:
        normalize_queue_attributes({"RedrivePolicy": policy}, creating=True)
    assert "valid values are from 1 to 1000 both inclusive" in raised.value.message


def test_redrive_policy_without_a_target_is_refused() -> None:
    policy = json.dumps({"maxReceiveCount": 3})
    with pytest.raises(errors.InvalidParameterValue) as raised:
        normalize_queue_attributes({"RedrivePolicy": policy}, creating=True)
    assert "deadLetterTargetArn" in raised.value.message


def test_empty_redrive_policy_clears_it() -> None:
    assert normalize_queue_attributes({"RedrivePolicy": ""}, creating=False) == {
        "RedrivePolicy": ""
    }


@pytest.mark.parametrize(
    "policy",
    [
        {"redrivePermission": "allowAll"},
        {"redrivePermission": "denyAll"},
        {"redrivePermission": "byQueue", "sourceQueueArns": ["arn:aws:sqs:r:1:a"]},
        {"redrivePermission": "byQueue", "sourceQueueArns": [f"arn:q{i}" for i in range(10)]},
    ],
)
def test_redrive_allow_policy_in_documented_form_is_accepted(policy: dict[str, object]) -> None:
    text = json.dumps(policy)
    assert normalize_queue_attributes({"RedriveAllowPolicy": text}, creating=True) == {
        "RedriveAllowPolicy": json.dumps(policy, separators=(",", ":"))
    }


@pytest.mark.parametrize(
    "policy",
    [
        {},
        {"redrivePermission": "sometimes"},
        {"redrivePermission": "byQueue"},
        {"redrivePermission": "byQueue", "sourceQueueArns": []},
        {"redrivePermission": "byQueue", "sourceQueueArns": [f"arn:q{i}" for i in range(11)]},
        {"redrivePermission": "allowAll", "sourceQueueArns": ["arn:aws:sqs:r:1:a"]},
    ],
)
def test_redrive_allow_policy_in_other_forms_is_refused(policy: dict[str, object]) -> None:
    with pytest.raises(errors.InvalidAttributeValue) as raised:
        normalize_queue_attributes({"RedriveAllowPolicy": json.dumps(policy)}, creating=True)
    assert raised.value.message == "Invalid value for the parameter RedriveAllowPolicy."


def test_kms_master_key_id_is_stored_as_given() -> None:
    attributes = {"KmsMasterKeyId": "alias/aws/sqs"}
    assert normalize_queue_attributes(attributes, creating=True) == attributes


def test_no_attributes_normalize_to_none() -> None:
    assert normalize_queue_attributes({}, creating=True) == {}


# --- GetQueueAttributes names ---------------------------------------------------------------


def test_every_readable_attribute_name_is_accepted_in_the_order_given() -> None:
    names = list(reversed(READABLE_QUEUE_ATTRIBUTES))
    assert validate_attribute_names_for_get(names) == names


def test_all_expands_to_every_readable_attribute() -> None:
    assert validate_attribute_names_for_get(["All"]) == list(READABLE_QUEUE_ATTRIBUTES)
    assert validate_attribute_names_for_get(["VisibilityTimeout", "All"]) == list(
        READABLE_QUEUE_ATTRIBUTES
    )
    assert "All" not in READABLE_QUEUE_ATTRIBUTES
    assert len(READABLE_QUEUE_ATTRIBUTES) == 21


def test_repeated_attribute_names_are_reported_once() -> None:
    assert validate_attribute_names_for_get(["QueueArn", "DelaySeconds", "QueueArn"]) == [
        "QueueArn",
        "DelaySeconds",
    ]


def test_asking_for_no_attribute_names_gives_none() -> None:
    assert validate_attribute_names_for_get([]) == []


@pytest.mark.parametrize("name", ["Bogus", "", "all", "queueArn", "SenderId"])
def test_unknown_attribute_names_cannot_be_read(name: str) -> None:
    with pytest.raises(errors.InvalidAttributeName) as raised:
        validate_attribute_names_for_get(["QueueArn", name])
    assert raised.value.message == f"Unknown Attribute {name}."


# --- message bodies -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "x",
        "\t\n\r",
        " ~",
        "\ud7ff",
        "\ue000",
        "\ufffd",
        "\U00010000",
        "\U0010ffff",
        '{"json": ["and", "xml <a/>"]}',
        "ünïcødé ✓ 中文 😀",
    ],
)
def test_bodies_of_allowed_characters_are_accepted(body: str) -> None:
    validate_message_body(body)


@pytest.mark.parametrize("body", [None, ""])
def test_missing_or_empty_body_is_refused(body: str | None) -> None:
    with pytest.raises(errors.MissingParameter) as raised:
        validate_message_body(body)
    assert raised.value.message == "The request must contain the parameter MessageBody."


@pytest.mark.parametrize(
    "character",
    ["\x00", "\x08", "\x0b", "\x0c", "\x1f", chr(0xD800), chr(0xDFFF), "\ufffe", "\uffff"],
)
def test_body_with_a_character_outside_the_sqs_set_is_refused(character: str) -> None:
    with pytest.raises(errors.InvalidMessageContents) as raised:
        validate_message_body("valid start " + character + " valid end")
    assert raised.value.message.startswith("Invalid characters found.")


def test_large_valid_body_is_accepted() -> None:
    validate_message_body("ok " * 300_000)


# --- message attributes -------------------------------------------------------------------


def test_typical_attributes_of_each_type_are_accepted() -> None:
    validate_message_attributes(
        {
            "City": string("Any City"),
            "Price": string("1.99", "Number"),
            "Precise": string("3.14159", "Number.float"),
            "Payload": binary(b"\x00\x01\x02"),
            "Image": binary(b"\x89PNG", "Binary.png"),
            "Doc": string('{"a": 1}', "String.json"),
            "a.b-c_d": string("v"),
        }
    )


def test_ten_attributes_are_accepted_and_eleven_are_not() -> None:
    ten = {f"attr{i}": string("v") for i in range(10)}
    validate_message_attributes(ten)
    eleven = {**ten, "attr10": string("v")}
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes(eleven)
    assert raised.value.message == (
        "Number of message attributes [11] exceeds the allowed maximum [10]."
    )


def test_attribute_name_of_256_characters_is_accepted_and_257_is_not() -> None:
    validate_message_attributes({"n" * 256: string("v")})
    with pytest.raises(errors.InvalidParameterValue):
        validate_message_attributes({"n" * 257: string("v")})


@pytest.mark.parametrize("name", ["", "has space", "slash/x", "star*", "colon:x", "ø✓"])
def test_attribute_names_with_other_characters_are_refused(name: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({name: string("v")})
    assert raised.value.message.startswith(f"The message attribute name '{name}' is invalid.")


@pytest.mark.parametrize("name", ["attr.1øßä", "ünï", "名前", "x_1-y"])
def test_attribute_names_may_use_letters_and_digits_of_any_script(name: str) -> None:
    # AWS accepts "attr.1øßä" (LocalStack's test recorded against SQS).
    validate_message_attributes({name: string("v")})


@pytest.mark.parametrize(
    "name", ["AWS.x", "aws.x", "Aws.Trace", "Amazon.x", "AMAZON.y", ".leading", "trailing."]
)
def test_reserved_or_dotted_edge_attribute_names_are_refused(name: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({name: string("v")})
    assert "reserved for internal use" in raised.value.message


@pytest.mark.parametrize("name", ["AWSome", "Amazonian", "aws", "my.AWS.thing"])
def test_names_merely_resembling_reserved_prefixes_are_accepted(name: str) -> None:
    validate_message_attributes({name: string("v")})


def test_attribute_name_with_consecutive_periods_is_refused() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a..b": string("v")})
    assert "consecutive periods" in raised.value.message


def test_attribute_without_a_data_type_is_refused() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a": string("v", "")})
    assert raised.value.message == (
        "The message attribute 'a' must contain non-empty message attribute type."
    )


@pytest.mark.parametrize(
    "data_type", ["string", "Text", "Str", "StringX", "String.", "Number. x", "Binary ", "Int"]
)
def test_data_types_without_a_supported_prefix_are_refused(data_type: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a": string("v", data_type)})
    assert raised.value.message == (
        "The message attribute 'a' has an invalid message attribute type, the set of supported"
        " type prefixes is Binary, Number, and String."
    )


def test_custom_data_type_of_256_characters_is_accepted_and_257_is_not() -> None:
    custom = "String." + "c" * (256 - len("String."))
    validate_message_attributes({"a": string("v", custom)})
    with pytest.raises(errors.InvalidParameterValue):
        validate_message_attributes({"a": string("v", custom + "c")})


@pytest.mark.parametrize("data_type", ["String", "Number", "String.custom", "Number.int"])
def test_string_and_number_attributes_need_a_non_empty_string_value(data_type: str) -> None:
    for empty in (None, ""):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_message_attributes({"a": string(empty, data_type)})
        # AWS's words: LocalStack's snapshot recorded against SQS,
        # test_send_message_with_empty_string_attribute.
        assert raised.value.message == (
            f"Message (user) attribute 'a' must contain a non-empty value of type '{data_type}'."
        )


@pytest.mark.parametrize("data_type", ["Binary", "Binary.gzip"])
def test_binary_attributes_need_a_non_empty_binary_value(data_type: str) -> None:
    for empty in (None, b""):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_message_attributes({"a": binary(empty, data_type)})
        assert f"must contain a non-empty value of type '{data_type}'" in raised.value.message


def test_binary_attribute_given_a_string_value_is_refused() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a": string("text", "Binary")})
    assert (
        raised.value.message
        == "The message attribute 'a' with type 'Binary' must use field 'Binary'."
    )


def test_string_attribute_given_a_binary_value_is_refused() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a": binary(b"bytes", "String")})
    assert (
        raised.value.message
        == "The message attribute 'a' with type 'String' must use field 'String'."
    )


def test_binary_values_may_hold_any_bytes() -> None:
    validate_message_attributes({"a": binary(bytes(range(256)))})


def test_string_attribute_values_follow_the_body_character_rules() -> None:
    validate_message_attributes({"a": string("tab\tand ✓ and 😀")})
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"a": string("bell\x07")})
    assert raised.value.message.startswith("Invalid characters found.")


@pytest.mark.parametrize(
    "number",
    [
        "0",
        "-0",
        "42",
        "+42",
        "-42",
        "1.99",
        ".5",
        "5.",
        "1e10",
        "-1.5E-3",
        "1" * 38,
        "0.000" + "9" * 38,
        "1" + "0" * 100,  # one significant digit
        "1e126",
        "-1e126",
        "1e-128",
        "-1e-128",
        "9.9999999999999999999999999999999999999e125",
    ],
)
def test_numbers_within_sqs_precision_and_range_are_accepted(number: str) -> None:
    validate_message_attributes({"n": string(number, "Number")})


@pytest.mark.parametrize(
    "number",
    ["abc", "1,5", "1_000", "NaN", "Infinity", "-inf", "0x10", " 1", "1 ", "e5", "1e", "--1"],
)
def test_values_that_are_not_numbers_are_refused_for_number_attributes(number: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"n": string(number, "Number")})
    assert raised.value.message == "Could not cast message attribute 'n' value to number."


@pytest.mark.parametrize(
    "number", ["1" * 39, "1." + "1" * 38, "1e127", "-1e127", "1.1e126", "1e-129", "9e-129"]
)
def test_numbers_beyond_sqs_precision_or_range_are_refused(number: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_message_attributes({"n": string(number, "Number.custom")})
    assert f"Value {number} for message attribute 'n'" in raised.value.message


def test_number_with_an_enormous_exponent_is_refused_without_overflowing() -> None:
    with pytest.raises(errors.InvalidParameterValue):
        validate_message_attributes({"n": string("1e999999999999", "Number")})


def test_string_custom_types_need_not_hold_numbers() -> None:
    validate_message_attributes({"n": string("not a number", "String.Number")})


# --- message system attributes ------------------------------------------------------------


def test_trace_header_is_the_one_accepted_system_attribute() -> None:
    validate_message_system_attributes({"AWSTraceHeader": string("Root=1-5759e988-bd862e3f")})
    with pytest.raises(errors.InvalidParameterValue):
        validate_message_system_attributes({"SenderId": string("x")})


def test_trace_header_must_be_a_non_empty_string() -> None:
    for value in (string("", "String"), string("x", "Number"), binary(b"x", "String")):
        with pytest.raises(errors.InvalidParameterValue):
            validate_message_system_attributes({"AWSTraceHeader": value})


# --- message size -------------------------------------------------------------------------


def test_message_size_counts_utf8_body_bytes() -> None:
    assert message_size("abc", {}) == 3
    assert message_size("é✓😀", {}) == 2 + 3 + 4


def test_message_size_counts_each_attribute_name_type_and_value() -> None:
    attributes = {
        "City": string("Any City"),  # 4 + 6 + 8
        "blob": binary(b"\x00\x01", "Binary.x"),  # 4 + 8 + 2
        "ü": string("1", "Number"),  # 2 + 6 + 1
    }
    assert message_size("body", attributes) == 4 + 18 + 14 + 9


def test_message_exactly_at_the_maximum_is_accepted_and_one_byte_more_is_not() -> None:
    validate_message_size(1024, 1024)
    with pytest.raises(errors.MessageTooLong) as raised:
        validate_message_size(1025, 1024)
    assert raised.value.message == (
        "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."
    )


# --- ReceiveMessage attribute selection -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "requested", "selected"),
    [
        ("color", ["All"], True),
        ("color", [".*"], True),
        ("color", ["color"], True),
        ("color", ["Color"], False),
        ("color", ["colour", "color"], True),
        ("color", [], False),
        ("color", ["col"], False),
        ("bar.baz", ["bar.*"], True),
        ("bar.baz.qux", ["bar.*"], True),
        ("bar", ["bar.*"], True),
        ("barn.x", ["bar.*"], True),
        ("color", ["*"], True),
        ("foo.bar", ["bar.*"], False),
        ("color", ["all"], False),
    ],
)
def test_message_attribute_names_select_all_exact_names_and_prefixes(
    name: str, requested: list[str], selected: bool
) -> None:
    assert message_attribute_selected(name, requested) is selected


# --- batches ------------------------------------------------------------------------------


def test_one_to_ten_distinct_well_formed_entry_ids_are_accepted() -> None:
    validate_batch_entries(["a"])
    validate_batch_entries([f"id-{i}_x" for i in range(10)])
    validate_batch_entries(["A" * 80])


@pytest.mark.parametrize(
    ("action", "entry"),
    [
        ("SendMessageBatch", "SendMessageBatchRequestEntry"),
        ("DeleteMessageBatch", "DeleteMessageBatchRequestEntry"),
        ("ChangeMessageVisibilityBatch", "ChangeMessageVisibilityBatchRequestEntry"),
    ],
)
def test_empty_batch_is_refused_naming_the_entry_type(action: str, entry: str) -> None:
    with pytest.raises(errors.EmptyBatchRequest) as raised:
        validate_batch_entries([], action)
    assert raised.value.message == f"There should be at least one {entry} in the request."


def test_batch_of_eleven_entries_is_refused() -> None:
    with pytest.raises(errors.TooManyEntriesInBatchRequest) as raised:
        validate_batch_entries([str(i) for i in range(11)])
    assert raised.value.message == "Maximum number of entries per request are 10. You have sent 11."


@pytest.mark.parametrize("entry_id", ["", "A" * 81, "has space", "dot.id", "ü", "a/b", "tab\t"])
def test_malformed_entry_ids_are_refused(entry_id: str) -> None:
    with pytest.raises(errors.InvalidBatchEntryId) as raised:
        validate_batch_entries(["ok", entry_id])
    assert raised.value.message == (
        "A batch entry id can only contain alphanumeric characters, hyphens and underscores."
        " It can be at most 80 letters long."
    )


def test_repeated_entry_id_is_refused_naming_it() -> None:
    with pytest.raises(errors.BatchEntryIdsNotDistinct) as raised:
        validate_batch_entries(["a", "b", "a"])
    assert raised.value.message == "Id a repeated."


def test_entry_ids_differing_only_in_case_are_distinct() -> None:
    validate_batch_entries(["a", "A"])


def test_batch_exactly_at_the_size_limit_is_accepted_and_one_byte_more_is_not() -> None:
    validate_batch_size(1_048_576, 1_048_576)
    with pytest.raises(errors.BatchRequestTooLong) as raised:
        validate_batch_size(1_048_577, 1_048_576)
    assert raised.value.message == (
        "Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes."
    )


# --- tags ---------------------------------------------------------------------------------


def test_tags_with_keys_of_1_to_128_and_values_of_0_to_256_characters_are_accepted() -> None:
    validate_tags({"k": "", "K" * 128: "v" * 256, "team": "queues"})


@pytest.mark.parametrize("key", ["", "k" * 129])
def test_tag_keys_outside_1_to_128_characters_are_refused(key: str) -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_tags({key: "v"})
    assert raised.value.message == "Tag keys must be between 1 and 128 characters in length."


def test_tag_value_longer_than_256_characters_is_refused() -> None:
    with pytest.raises(errors.InvalidParameterValue) as raised:
        validate_tags({"k": "v" * 257})
    assert raised.value.message == "Tag values must be between 0 and 256 characters in length."


def test_a_queue_may_carry_fifty_tags_but_not_fifty_one() -> None:
    existing = [f"old{i}" for i in range(40)]
    validate_tags({f"new{i}": "v" for i in range(10)}, existing_keys=existing, queue_name="q")
    with pytest.raises(errors.TooManyTags) as raised:
        validate_tags({f"new{i}": "v" for i in range(11)}, existing_keys=existing, queue_name="q")
    assert raised.value.message == "Too many tags added for queue q."


def test_replacing_existing_tags_does_not_count_them_twice() -> None:
    existing = [f"k{i}" for i in range(50)]
    validate_tags({f"k{i}": "new" for i in range(50)}, existing_keys=existing)


def test_untagging_needs_at_least_one_well_formed_key() -> None:
    validate_tag_keys(["k", "K" * 128])
    with pytest.raises(errors.InvalidParameterValue, match="between 1 and 128"):
        validate_tag_keys([])
    with pytest.raises(errors.InvalidParameterValue):
        validate_tag_keys(["k" * 129])


# --- per-request parameters ---------------------------------------------------------------


def test_delay_seconds_of_0_to_900_are_accepted_and_others_are_not() -> None:
    validate_delay_seconds(0)
    validate_delay_seconds(900)
    for value in (-1, 901):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_delay_seconds(value)
        assert raised.value.message == (
            f"Value {value} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be"
            " >= 0 and <= 900."
        )


def test_visibility_timeout_of_0_to_43200_is_accepted_and_others_are_not() -> None:
    validate_visibility_timeout(0)
    validate_visibility_timeout(43_200)
    for value in (-1, 43_201):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_visibility_timeout(value)
        assert raised.value.message == (
            f"Value {value} for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and"
            " <= 43200, if provided."
        )


def test_max_number_of_messages_of_1_to_10_is_accepted_and_others_are_not() -> None:
    validate_max_number_of_messages(1)
    validate_max_number_of_messages(10)
    for value in (0, 11, -1):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_max_number_of_messages(value)
        assert raised.value.message == (
            f"Value {value} for parameter MaxNumberOfMessages is invalid. Reason: Must be between"
            " 1 and 10, if provided."
        )


def test_wait_time_seconds_of_0_to_20_is_accepted_and_others_are_not() -> None:
    validate_wait_time_seconds(0)
    validate_wait_time_seconds(20)
    for value in (-1, 21):
        with pytest.raises(errors.InvalidParameterValue) as raised:
            validate_wait_time_seconds(value)
        assert raised.value.message == (
            f"Value {value} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and"
            " <= 20, if provided."
        )


# --- FIFO -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["g", "a" * 128, "orders:42/{x}~!", "A-Z_0.9"])
def test_fifo_identifiers_of_alphanumerics_and_punctuation_are_accepted(value: str) -> None:
    validate_fifo_identifier(value, "MessageGroupId")


@pytest.mark.parametrize("value", ["", "a" * 129, "has space", "tab\t", "é"])
def test_other_fifo_identifiers_are_refused_naming_the_parameter(value: str) -> None:
    with pytest.raises(errors.InvalidParameterValue, match="MessageDeduplicationId"):
        validate_fifo_identifier(value, "MessageDeduplicationId")


def test_a_fifo_send_needs_a_group_and_a_deduplication_id_or_content_deduplication() -> None:
    with pytest.raises(errors.MissingParameter):
        validate_fifo_send(None, "d", None, False)
    with pytest.raises(errors.InvalidParameterValue, match="ContentBasedDeduplication"):
        validate_fifo_send("g", None, None, False)
    validate_fifo_send("g", None, None, True)
    validate_fifo_send("g", "d", 0, False)
    with pytest.raises(errors.InvalidParameterValue, match="DelaySeconds"):
        validate_fifo_send("g", "d", 1, False)


def test_fifo_attributes_are_unknown_to_standard_queues() -> None:
    with pytest.raises(errors.InvalidAttributeName):
        validate_queue_type_attributes({"DeduplicationScope": "queue"}, fifo=False)
    validate_queue_type_attributes({"VisibilityTimeout": "3"}, fifo=False)


def test_per_group_throughput_needs_per_group_deduplication() -> None:
    with pytest.raises(errors.InvalidAttributeValue):
        validate_queue_type_attributes(
            {"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "queue"}, True
        )
    validate_queue_type_attributes(
        {"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "messageGroup"}, True
    )
