"""The MD5 digests SQS returns for message bodies and message attributes.

Owns the exact byte layout AWS hashes for MD5OfMessageAttributes and
MD5OfMessageSystemAttributes, so that SDKs which verify them (the Java and .NET SDKs do)
accept our answers. Pure functions; imports only `cqs.domain.model` and the standard library.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from cqs.domain.model import MessageAttributeValue

# Transport type bytes of the AWS attribute digest: which value field carries the data.
STRING_TRANSPORT = 1
BINARY_TRANSPORT = 2


def md5_of_body(body: str) -> str:
    """Hex MD5 of the UTF-8 body, as MD5OfMessageBody."""
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def md5_of_message_attributes(attributes: Mapping[str, MessageAttributeValue]) -> str | None:
    """Hex MD5OfMessageAttributes as AWS computes it; None when there are no attributes.

    For each attribute, in order of name: length-prefixed UTF-8 name, length-prefixed
    UTF-8 data type, one transport byte (1 string value, 2 binary value), then the
    length-prefixed value. Lengths are 4-byte big-endian.
    """
    if not attributes:
        return None
    digest = hashlib.md5(usedforsecurity=False)
    for name in sorted(attributes):
        value = attributes[name]
        _update_with_length(digest, name.encode("utf-8"))
        _update_with_length(digest, value.data_type.encode("utf-8"))
        # The SDKs pick the transport by which value is present, string first.
        if value.string_value is not None:
            digest.update(bytes((STRING_TRANSPORT,)))
            _update_with_length(digest, value.string_value.encode("utf-8"))
        elif value.binary_value is not None:
            digest.update(bytes((BINARY_TRANSPORT,)))
            _update_with_length(digest, value.binary_value)
    return digest.hexdigest()


def md5_of_system_attributes(attributes: Mapping[str, MessageAttributeValue]) -> str | None:
    """Hex MD5OfMessageSystemAttributes (AWSTraceHeader): the same layout as user attributes."""
    return md5_of_message_attributes(attributes)


def _update_with_length(digest: hashlib._Hash, data: bytes) -> None:
    digest.update(len(data).to_bytes(4, "big"))
    digest.update(data)
