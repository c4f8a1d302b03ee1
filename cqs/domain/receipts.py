"""Signed receipt handles: what a receive hands out and delete / change-visibility accept.

Owns the handle format: url-safe base64 (no padding) of a compact binary record of queue
key (account, region and name), message id and receipt nonce, followed by a truncated
HMAC-SHA256 over that record. A handle cannot be forged without the secret, and one issued
for one queue is refused by another, in any account or region. Pure code: imports only `cqs.domain.model`, `cqs.domain.errors` and the standard library.

Record layout (version 1):
    version (1 byte) | flags (1 byte) | len + queue key (UTF-8)
    | message id: 16 UUID bytes if flags has MESSAGE_ID_IS_UUID, else len + UTF-8
    | len + receipt nonce (UTF-8) | tag (TAG_BYTES of HMAC-SHA256)
Every `len` is one byte.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import uuid

from cqs.domain.errors import ReceiptHandleIsInvalid
from cqs.domain.model import ReceiptHandle

FORMAT_VERSION = 1
MESSAGE_ID_IS_UUID = 0x01
TAG_BYTES = 16  # 128 bits of HMAC-SHA256: forging needs the secret, not luck
MINIMUM_SECRET_BYTES = 16
NONCE_RANDOM_BYTES = 9  # 12 url-safe characters
_MAC_CONTEXT = b"cqs receipt handle v1\x00"  # keeps this key's MACs apart from other uses
_URL_SAFE_BASE64 = re.compile(r"[A-Za-z0-9_-]+")
# The longest handle that can be well formed: three 255-byte fields, the header and the tag.
_MAXIMUM_HANDLE_CHARS = 4 * (2 + 3 * 256 + TAG_BYTES) // 3 + 4


def new_nonce() -> str:
    """A fresh random token for one delivery of a message (12 url-safe characters)."""
    return secrets.token_urlsafe(NONCE_RANDOM_BYTES)


class ReceiptSigner:
    """Issues receipt handles and reads them back, refusing any it did not issue."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < MINIMUM_SECRET_BYTES:
            raise ValueError(f"the receipt secret needs at least {MINIMUM_SECRET_BYTES} bytes")
        self._secret = secret

    def issue(self, handle: ReceiptHandle) -> str:
        """The opaque receipt handle string for `handle`."""
        record = _encode_record(handle)
        token = record + self._tag(record)
        return base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii")

    def read(self, text: str, queue_key: str) -> ReceiptHandle:
        """What `text` says, if this signer issued it for `queue_key`.

        Raises ReceiptHandleIsInvalid for anything else: not base64, truncated, altered,
        signed with another secret, or issued for another queue.
        """
        token = _decode_token(text)
        if token is None or len(token) <= TAG_BYTES:
            raise _invalid(text)
        record, tag = token[:-TAG_BYTES], token[-TAG_BYTES:]
        if not hmac.compare_digest(tag, self._tag(record)):
            raise _invalid(text)
        handle = _decode_record(record)
        if handle is None or handle.queue_key != queue_key:
            raise _invalid(text)
        return handle

    def _tag(self, record: bytes) -> bytes:
        return hmac.new(self._secret, _MAC_CONTEXT + record, hashlib.sha256).digest()[:TAG_BYTES]


def _invalid(text: str) -> ReceiptHandleIsInvalid:
    return ReceiptHandleIsInvalid(
        f'The input receipt handle "{text}" is not a valid receipt handle.'
    )


def _encode_record(handle: ReceiptHandle) -> bytes:
    flags = 0
    message_id_field: bytes
    if _is_canonical_uuid(handle.message_id):
        flags |= MESSAGE_ID_IS_UUID
        message_id_field = uuid.UUID(handle.message_id).bytes
    else:
        message_id_field = _length_prefixed(handle.message_id, "message id")
    return b"".join(
        (
            bytes((FORMAT_VERSION, flags)),
            _length_prefixed(handle.queue_key, "queue key"),
            message_id_field,
            _length_prefixed(handle.receipt_nonce, "receipt nonce"),
        )
    )


def _length_prefixed(text: str, what: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 255:
        raise ValueError(f"the {what} is too long for a receipt handle: {len(data)} bytes")
    return bytes((len(data),)) + data


def _is_canonical_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _decode_token(text: str) -> bytes | None:
    """The bytes of an unpadded url-safe base64 text, or None unless it is exactly canonical."""
    if len(text) > _MAXIMUM_HANDLE_CHARS or not _URL_SAFE_BASE64.fullmatch(text):
        return None
    try:
        token = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    # Refuse texts that differ from what we would issue (e.g. in the unused low bits).
    if base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii") != text:
        return None
    return token


def _decode_record(record: bytes) -> ReceiptHandle | None:
    """Parses a record whose tag has been verified; None if it is not well formed."""
    reader = _RecordReader(record)
    try:
        version, flags = reader.take(1)[0], reader.take(1)[0]
        if version != FORMAT_VERSION or flags & ~MESSAGE_ID_IS_UUID:
            return None
        queue_key = reader.take_text()
        if flags & MESSAGE_ID_IS_UUID:
            message_id = str(uuid.UUID(bytes=reader.take(16)))
        else:
            message_id = reader.take_text()
        nonce = reader.take_text()
    except (IndexError, UnicodeDecodeError):
        return None
    if not reader.at_end():
        return None
    return ReceiptHandle(queue_key=queue_key, message_id=message_id, receipt_nonce=nonce)


class _RecordReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def take(self, count: int) -> bytes:
        end = self._position + count
        if end > len(self._data):
            raise IndexError("record ends early")
        chunk = self._data[self._position : end]
        self._position = end
        return chunk

    def take_text(self) -> str:
        length = self.take(1)[0]
        return self.take(length).decode("utf-8")

    def at_end(self) -> bool:
        return self._position == len(self._data)
