"""Server-side encryption attributes: which of SSE-SQS and SSE-KMS a queue reports.

Owns how SqsManagedSseEnabled, KmsMasterKeyId and KmsDataKeyReusePeriodSeconds combine, as
AWS answers them: SSE-SQS is on by default (a new queue reports SqsManagedSseEnabled
`true`), a KMS key turns it off, the two cannot be asked for in one call, and an empty
KmsMasterKeyId removes the key and its reuse period. cqs encrypts nothing; it stores and
reports. Pure functions: imports `cqs.domain.errors` and the standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping

from cqs.domain.errors import InvalidAttributeName

SSE_SQS = "SqsManagedSseEnabled"
KMS_KEY = "KmsMasterKeyId"
KMS_REUSE_PERIOD = "KmsDataKeyReusePeriodSeconds"


def reported_sqs_managed_sse(attributes: Mapping[str, str]) -> str:
    """SqsManagedSseEnabled as GetQueueAttributes reports it: as set, else `true` unless a
    KMS key is set (AWS enables SSE-SQS on new queues by default)."""
    if SSE_SQS in attributes:
        return attributes[SSE_SQS]
    return "false" if attributes.get(KMS_KEY) else "true"


def apply_encryption_attributes(
    stored: Mapping[str, str], given: Mapping[str, str]
) -> dict[str, str]:
    """`stored` with the (normalized) `given` attributes applied, encryption settled:
    asking for both kinds at once is InvalidAttributeName (AWS's words); a KMS key turns
    SSE-SQS off, SSE-SQS on removes the KMS key; an empty key removes the key and its
    reuse period."""
    if given.get(SSE_SQS) == "true" and given.get(KMS_KEY):
        raise InvalidAttributeName(
            "You can use one type of server-side encryption (SSE) at one time. You can"
            " either enable KMS SSE or SQS SSE."
        )
    merged = {**stored, **given}
    if given.get(KMS_KEY):
        if SSE_SQS not in given:
            merged[SSE_SQS] = "false"
    elif given.get(SSE_SQS) == "true":
        merged.pop(KMS_KEY, None)
        merged.pop(KMS_REUSE_PERIOD, None)
    if merged.get(KMS_KEY) == "":
        merged.pop(KMS_KEY)
        merged.pop(KMS_REUSE_PERIOD, None)
    return merged
