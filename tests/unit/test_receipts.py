"""Signed receipt handles: what is issued reads back, and nothing else does."""

from __future__ import annotations

import base64
import string
import uuid

import pytest

from cqs.domain.errors import ReceiptHandleIsInvalid
from cqs.domain.model import ReceiptHandle
from cqs.domain.receipts import ReceiptSigner, new_nonce

SECRET = b"0123456789abcdef0123456789abcdef"
QUEUE = "orders"
URL_SAFE = string.ascii_letters + string.digits + "-_"


def a_handle(queue_key: str = QUEUE, message_id: str | None = None) -> ReceiptHandle:
    return ReceiptHandle(
        queue_key=queue_key,
        message_id=message_id if message_id is not None else str(uuid.uuid1()),
        receipt_nonce=new_nonce(),
    )


@pytest.fixture
def signer() -> ReceiptSigner:
    return ReceiptSigner(SECRET)


def assert_refused(signer: ReceiptSigner, text: str, queue_key: str = QUEUE) -> None:
    with pytest.raises(ReceiptHandleIsInvalid) as raised:
        signer.read(text, queue_key)
    assert (
        raised.value.message == f'The input receipt handle "{text}" is not a valid receipt handle.'
    )


# --- what works ---------------------------------------------------------------------------


def test_issued_handle_reads_back_to_the_same_message_and_delivery(signer: ReceiptSigner) -> None:
    handle = a_handle()
    assert signer.read(signer.issue(handle), QUEUE) == handle


def test_another_signer_with_the_same_secret_reads_the_handle(signer: ReceiptSigner) -> None:
    # Every API server shares the secret, so any of them can accept any handle.
    handle = a_handle()
    assert ReceiptSigner(SECRET).read(signer.issue(handle), QUEUE) == handle


def test_message_ids_that_are_not_canonical_uuids_read_back_exactly(signer: ReceiptSigner) -> None:
    for message_id in ["not-a-uuid", str(uuid.uuid1()).upper(), "", "ü-id", "x" * 255]:
        handle = a_handle(message_id=message_id)
        assert signer.read(signer.issue(handle), QUEUE) == handle


def test_handle_is_url_safe_text(signer: ReceiptSigner) -> None:
    text = signer.issue(a_handle())
    assert text and set(text) <= set(URL_SAFE)


def test_handle_stays_far_under_the_sqs_limit_for_the_longest_queue_name(
    signer: ReceiptSigner,
) -> None:
    longest_queue = "q" * 80
    uuid_handle = signer.issue(a_handle(queue_key=longest_queue))
    text_id_handle = signer.issue(a_handle(queue_key=longest_queue, message_id="m" * 64))
    assert len(uuid_handle) <= 200
    assert len(text_id_handle) <= 300


def test_two_deliveries_of_one_message_get_different_handles(signer: ReceiptSigner) -> None:
    message_id = str(uuid.uuid1())
    first = signer.issue(a_handle(message_id=message_id))
    second = signer.issue(a_handle(message_id=message_id))
    assert first != second
    assert signer.read(first, QUEUE).receipt_nonce != signer.read(second, QUEUE).receipt_nonce


def test_nonce_is_twelve_url_safe_characters_and_does_not_repeat() -> None:
    nonces = [new_nonce() for _ in range(2000)]
    assert all(len(nonce) == 12 and set(nonce) <= set(URL_SAFE) for nonce in nonces)
    assert len(set(nonces)) == len(nonces)


# --- what is refused ----------------------------------------------------------------------


def test_handle_for_another_queue_is_refused(signer: ReceiptSigner) -> None:
    text = signer.issue(a_handle(queue_key="orders"))
    assert_refused(signer, text, queue_key="orders-dlq")
    assert_refused(signer, text, queue_key="Orders")


def test_handle_signed_with_another_secret_is_refused(signer: ReceiptSigner) -> None:
    other = ReceiptSigner(b"another secret of thirty-two by.")
    assert_refused(signer, other.issue(a_handle()))


@pytest.mark.parametrize("queue_key", ["orders", "orders1", "orders12"])
def test_changing_any_character_of_the_handle_is_refused(
    signer: ReceiptSigner, queue_key: str
) -> None:
    # Three name lengths give every base64 tail, including ones whose last character
    # carries unused bits.
    text = signer.issue(a_handle(queue_key=queue_key))
    for position, original in enumerate(text):
        for step in range(1, 64):
            replacement = URL_SAFE[(URL_SAFE.index(original) + step) % 64]
            assert_refused(signer, text[:position] + replacement + text[position + 1 :], queue_key)


def test_flipping_any_bit_of_the_decoded_handle_is_refused(signer: ReceiptSigner) -> None:
    text = signer.issue(a_handle())
    token = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    for position in range(len(token)):
        for bit in range(8):
            altered = bytearray(token)
            altered[position] ^= 1 << bit
            forged = base64.urlsafe_b64encode(bytes(altered)).rstrip(b"=").decode()
            assert_refused(signer, forged)


def test_truncated_or_extended_handle_is_refused(signer: ReceiptSigner) -> None:
    text = signer.issue(a_handle())
    for length in range(len(text)):
        assert_refused(signer, text[:length])
    for suffix in ["A", "AA", "AAAA", "=", "==", " ", "\n"]:
        assert_refused(signer, text + suffix)


def test_text_that_is_not_url_safe_base64_is_refused(signer: ReceiptSigner) -> None:
    text = signer.issue(a_handle())
    standard_alphabet = text.replace("-", "+").replace("_", "/")
    for candidate in [
        "",
        "not a handle!",
        "====",
        "AQID\u00e9",
        " " + text,
        text[:10] + "." + text[11:],
    ]:
        assert_refused(signer, candidate)
    if standard_alphabet != text:
        assert_refused(signer, standard_alphabet)


def test_made_up_record_without_the_right_signature_is_refused(signer: ReceiptSigner) -> None:
    queue = QUEUE.encode()
    record = bytes((1, 0, len(queue))) + queue + b"\x02id" + b"\x05nonce"
    for tag in [b"\x00" * 16, b"\xff" * 16, bytes(range(16))]:
        assert_refused(signer, base64.urlsafe_b64encode(record + tag).rstrip(b"=").decode())


def test_very_long_text_is_refused_quickly(signer: ReceiptSigner) -> None:
    assert_refused(signer, "A" * 100_000)


# --- misuse by the caller ------------------------------------------------------------------


def test_a_short_secret_is_rejected() -> None:
    with pytest.raises(ValueError):
        ReceiptSigner(b"too short")


def test_a_field_too_long_to_encode_is_rejected_when_issuing(signer: ReceiptSigner) -> None:
    with pytest.raises(ValueError):
        signer.issue(a_handle(message_id="m" * 256))
