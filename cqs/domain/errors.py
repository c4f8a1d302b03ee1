"""The one exception tree of cqs, in queue words.

Owns every error the service can raise. Carries no wire codes and no HTTP statuses: the
table in `cqs/sqs_api/errors.py` maps each class to its SQS code and status. Imports nothing
from cqs.
"""

from __future__ import annotations


class CqsError(Exception):
    """Base of every error a client may see; `str(error)` is the message shown to it."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


# --- the request itself -----------------------------------------------------------------

class MalformedRequest(CqsError):
    """The body could not be parsed (bad JSON, bad form encoding)."""


class UnknownAction(CqsError):
    """The action name is not an SQS action."""


class MissingParameter(CqsError):
    """A required parameter is absent."""


class InvalidParameterValue(CqsError):
    """A parameter is present but its value is not allowed."""


class InvalidAttributeName(CqsError):
    """An attribute name is unknown or not allowed here."""


class InvalidAttributeValue(CqsError):
    """A queue attribute value is out of range or malformed."""


class InvalidMessageContents(CqsError):
    """The message body has characters SQS does not allow."""


class MessageTooLong(CqsError):
    """The message (body plus attributes) is larger than the queue allows."""


class InvalidAddress(CqsError):
    """The queue URL does not name a queue of this service."""


# --- queues -----------------------------------------------------------------------------

class QueueDoesNotExist(CqsError):
    """The named queue does not exist."""


class QueueNameExists(CqsError):
    """A queue with this name exists with different attributes."""


class TooManyTags(CqsError):
    """A queue may carry at most 50 tags."""


class QueueDeletedRecently(CqsError):
    """A queue of this name was deleted too recently for the name to be used again."""


class PurgeQueueInProgress(CqsError):
    """The queue was purged less than 60 seconds ago."""


class OverLimit(CqsError):
    """The action would exceed a limit (e.g. too many actions in one permission)."""


class ResourceNotFound(CqsError):
    """A resource named by ARN or handle (a queue, a message move task) does not exist."""


# --- messages and receipt handles -------------------------------------------------------

class ReceiptHandleIsInvalid(CqsError):
    """The receipt handle is forged, malformed, for another queue, or superseded."""


class MessageNotInflight(CqsError):
    """The message is not in flight, so its visibility cannot be changed."""


# --- batches ----------------------------------------------------------------------------

class EmptyBatchRequest(CqsError):
    """A batch request has no entries."""


class TooManyEntriesInBatchRequest(CqsError):
    """A batch request has more than ten entries."""


class BatchEntryIdsNotDistinct(CqsError):
    """Two entries of one batch share an Id."""


class InvalidBatchEntryId(CqsError):
    """A batch entry Id is empty, too long, or has characters SQS does not allow."""


class BatchRequestTooLong(CqsError):
    """The entries of a send batch add up to more than the queue's maximum message size."""


# --- who is asking (docs/security.md) ---------------------------------------------------

class AuthenticationError(CqsError):
    """The request's credentials could not be accepted: base of the signature errors."""


class MissingAuthenticationToken(AuthenticationError):
    """The request carries no credentials at all, and the server verifies signatures."""


class IncompleteSignature(AuthenticationError):
    """The credentials are there but malformed: a missing or unreadable SigV4 part."""


class InvalidClientTokenId(AuthenticationError):
    """The access key id (or its session token) is not one the server knows."""


class SignatureDoesNotMatch(AuthenticationError):
    """The signature is not the one the key's secret gives for this request."""


class RequestExpired(AuthenticationError):
    """The signed date is more than 15 minutes off, or a presigned URL has expired."""


class AccessDenied(CqsError):
    """The caller is known, but no policy lets it do this to that queue (or one denies it)."""


# --- the service ------------------------------------------------------------------------

class StorageError(CqsError):
    """A backend call did not complete; the client may retry. Catch the subclasses where
    they mean different things: only StorageUnavailable says a backend is down."""


class StorageUnavailable(StorageError):
    """A backend (Redis or Cassandra) could not be reached in time; the client may retry."""


class CacheUnreachable(StorageUnavailable):
    """Redis did not answer, yet may still hold its data and serve other processes (a
    stall, a cut link, a replica taking over): what it hands out meanwhile is unknown, so
    nothing may be handed out from the store in its place."""


class StorageBusy(StorageError):
    """A local limit held a backend call back too long (a full connection pool, a slow event
    loop): back-pressure, not an outage. The backend is up; the client may retry."""


class UnsupportedOperation(CqsError):
    """The action is known but not supported by this queue or this build."""
