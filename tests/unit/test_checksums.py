"""MD5OfMessageBody and the AWS message-attribute digest, checked against published vectors,
an independent reading of the AWS algorithm, and moto's implementation."""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Mapping

import pytest

from cqs.domain.checksums import md5_of_body, md5_of_message_attributes, md5_of_system_attributes
from cqs.domain.model import MessageAttributeValue


def string(value: str, data_type: str = "String") -> MessageAttributeValue:
    return MessageAttributeValue(data_type=data_type, string_value=value)


def binary(value: bytes, data_type: str = "Binary") -> MessageAttributeValue:
    return MessageAttributeValue(data_type=data_type, binary_value=value)


def reference_digest(attributes: Mapping[str, MessageAttributeValue]) -> str:
    """The AWS developer guide's recipe, written out separately from cqs.domain.checksums."""
    chunks: list[bytes] = []

    def framed(data: bytes) -> None:
        chunks.append(struct.pack(">I", len(data)) + data)

    for name in sorted(attributes):
        attribute = attributes[name]
        framed(name.encode())
        framed(attribute.data_type.encode())
        if attribute.string_value is not None:
            chunks.append(b"\x01")
            framed(attribute.string_value.encode())
        else:
            assert attribute.binary_value is not None
            chunks.append(b"\x02")
            framed(attribute.binary_value)
    return hashlib.md5(b"".join(chunks)).hexdigest()


# --- bodies -------------------------------------------------------------------------------


def test_body_digest_matches_the_rfc_1321_test_suite() -> None:
    assert md5_of_body("") == "d41d8cd98f00b204e9800998ecf8427e"
    assert md5_of_body("abc") == "900150983cd24fb0d6963f7d28e17f72"
    assert md5_of_body("message digest") == "f96b697d7cb7938d525a2f31aaf161d0"


def test_body_digest_hashes_the_utf8_bytes_of_unicode_text() -> None:
    body = "héllo wörld ✓ 𝄞"
    assert md5_of_body(body) == hashlib.md5(body.encode("utf-8")).hexdigest()
    assert md5_of_body(body) != hashlib.md5(body.encode("utf-16")).hexdigest()


# --- published vectors --------------------------------------------------------------------


def test_message_without_attributes_has_no_attribute_digest() -> None:
    assert md5_of_message_attributes({}) is None
    assert md5_of_system_attributes({}) is None


def test_single_string_attribute_matches_published_vector() -> None:
    attributes = {"SellerName": string("Example Store")}
    assert md5_of_message_attributes(attributes) == "cd28f3b68aeee4b2eac9c66f2f694b58"


def test_several_string_attributes_match_published_vector() -> None:
    attributes = {
        "City": string("Any City"),
        "PostalCode": string("99065"),
        "Region": string("WA"),
        "SellerName": string("Example Store"),
    }
    assert md5_of_message_attributes(attributes) == "66d793da93becb551e41562575418975"


def test_string_and_number_attributes_match_published_vector() -> None:
    attributes = {
        "City": string("Any City"),
        "PostalCode": string("99065"),
        "PricePerGallon": string("1.99", "Number"),
        "Region": string("WA"),
        "SellerName": string("Example Store"),
    }
    assert md5_of_message_attributes(attributes) == "10809b55e3d9b22c17220b7dbaf283ef"


def test_number_attribute_matches_published_vector() -> None:
    attributes = {"timestamp": string("1493147359900", "Number")}
    assert md5_of_message_attributes(attributes) == "235c5c510d26fb653d073faed50ae77c"


def test_attributes_are_hashed_in_name_order_whatever_order_they_arrive_in() -> None:
    attributes = {
        "test_attribute_name_2": string("test_attribute_value_2"),
        "test_attribute_name_1": string("test_attribute_value_1"),
    }
    assert md5_of_message_attributes(attributes) == "d53f3b558fe951154770f25cb63dbba9"


def test_binary_attribute_matches_published_vector() -> None:
    attributes = {"test_attribute_name": binary(b"test_attribute_value")}
    assert md5_of_message_attributes(attributes) == "23f6bd27ea87aab7dfeadcc9aebee495"


# --- the layout, piece by piece ------------------------------------------------------------


def test_binary_and_string_values_with_the_same_bytes_hash_differently() -> None:
    as_string = {"a": string("xyz", "String.raw")}
    as_binary = {"a": binary(b"xyz", "String.raw")}
    assert md5_of_message_attributes(as_string) != md5_of_message_attributes(as_binary)


def test_custom_number_type_uses_the_string_transport_and_its_full_type_name() -> None:
    attributes = {"price": string("3.14", "Number.float")}
    expected = hashlib.md5(
        b"\x00\x00\x00\x05price"
        + b"\x00\x00\x00\x0cNumber.float"
        + b"\x01"
        + b"\x00\x00\x00\x043.14"
    ).hexdigest()
    assert md5_of_message_attributes(attributes) == expected


def test_custom_binary_type_uses_the_binary_transport() -> None:
    attributes = {"blob": binary(b"\x00\xff", "Binary.gzip")}
    expected = hashlib.md5(
        b"\x00\x00\x00\x04blob"
        + b"\x00\x00\x00\x0bBinary.gzip"
        + b"\x02"
        + b"\x00\x00\x00\x02\x00\xff"
    ).hexdigest()
    assert md5_of_message_attributes(attributes) == expected


def test_empty_string_value_is_still_framed_with_a_zero_length() -> None:
    attributes = {"e": string("")}
    expected = hashlib.md5(
        b"\x00\x00\x00\x01e" + b"\x00\x00\x00\x06String" + b"\x01" + b"\x00\x00\x00\x00"
    ).hexdigest()
    assert md5_of_message_attributes(attributes) == expected


def test_lengths_count_utf8_bytes_not_characters() -> None:
    attributes = {"name": string("é")}
    expected = hashlib.md5(
        b"\x00\x00\x00\x04name" + b"\x00\x00\x00\x06String" + b"\x01" + b"\x00\x00\x00\x02\xc3\xa9"
    ).hexdigest()
    assert md5_of_message_attributes(attributes) == expected


def test_system_attribute_digest_uses_the_same_layout() -> None:
    trace = {"AWSTraceHeader": string("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")}
    assert md5_of_system_attributes(trace) == reference_digest(trace)
    assert md5_of_system_attributes(trace) == md5_of_message_attributes(trace)


# --- many inputs, two other implementations -------------------------------------------------

NAME_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
TEXT_CHARACTERS = "aZ09 _-.,;\t\n\rüßéñ中文字✓€\U0001f600\U0001d11e\ufffd\ue000"
DATA_TYPES = [
    "String",
    "Number",
    "Binary",
    "String.json",
    "Number.float",
    "Binary.gzip",
    "String.ü",
]


def random_attributes(rng: random.Random, allow_empty: bool) -> dict[str, MessageAttributeValue]:
    attributes: dict[str, MessageAttributeValue] = {}
    for _ in range(rng.randint(1, 10)):
        name = "".join(rng.choice(NAME_CHARACTERS) for _ in range(rng.randint(1, 40)))
        data_type = rng.choice(DATA_TYPES)
        smallest = 0 if allow_empty else 1
        if data_type.startswith("Binary"):
            value = binary(rng.randbytes(rng.randint(smallest, 300)), data_type)
        elif data_type.startswith("Number"):
            value = string(str(rng.uniform(-1e6, 1e6)), data_type)
        else:
            text = "".join(rng.choice(TEXT_CHARACTERS) for _ in range(rng.randint(smallest, 300)))
            value = string(text, data_type)
        attributes[name] = value
    return attributes


def test_digest_agrees_with_a_separate_reading_of_the_algorithm_on_many_inputs() -> None:
    rng = random.Random(20240605)
    for _ in range(2000):
        attributes = random_attributes(rng, allow_empty=True)
        assert md5_of_message_attributes(attributes) == reference_digest(attributes), attributes


@pytest.mark.parametrize("seed", range(4))
def test_digest_agrees_with_moto_on_many_inputs(seed: int) -> None:
    # moto's SQS Message computes MD5OfMessageAttributes the way the AWS SDKs check it.
    from moto.sqs.models import Message as MotoMessage

    rng = random.Random(seed)
    for _ in range(250):
        attributes = random_attributes(rng, allow_empty=False)  # moto skips empty values
        moto_message = MotoMessage("id", "body")
        moto_message.message_attributes = {
            name: (
                {"DataType": value.data_type, "BinaryValue": value.binary_value}
                if value.binary_value is not None
                else {"DataType": value.data_type, "StringValue": value.string_value}
            )
            for name, value in attributes.items()
        }
        assert md5_of_message_attributes(attributes) == moto_message.attribute_md5, attributes
