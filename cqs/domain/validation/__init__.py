"""SQS request rules: names, limits and formats, each failure raised as a `cqs.domain.errors` class.

The rules live beside what they check, with the error texts AWS returns so that clients see
the messages they would see from SQS: `limits` (the numbers), `text` (the one character rule
for text fields, and bounded JSON), `queues` (queue names and attributes), `messages`
(bodies, message attributes, size), `batches`, `tags`, `parameters` (delay, visibility,
receive count and wait) and `fifo` (FIFO attributes, identifiers and sends). This package
re-exports their public names, so callers write `validation.validate_x(...)`.

Pure functions, no I/O: imports only `cqs.domain.model`, `cqs.domain.errors` and the standard library.
"""

from __future__ import annotations

from cqs.domain.validation.batches import (
    validate_batch_entries,
    validate_batch_size,
)
from cqs.domain.validation.encryption import (
    apply_encryption_attributes,
    reported_sqs_managed_sse,
)
from cqs.domain.validation.fifo import (
    FIFO_ONLY_QUEUE_ATTRIBUTES,
    FIFO_QUEUE_DEFAULTS,
    validate_fifo_identifier,
    validate_fifo_requirements,
    validate_fifo_send,
    validate_queue_type_attributes,
    validate_standard_send,
)
from cqs.domain.validation.limits import (
    MAX_ATTRIBUTE_NAME_LENGTH,
    MAX_ATTRIBUTE_TYPE_LENGTH,
    MAX_BATCH_ENTRIES,
    MAX_BATCH_ENTRY_ID_LENGTH,
    MAX_DELAY_SECONDS,
    MAX_FIFO_IDENTIFIER_LENGTH,
    MAX_JSON_DEPTH,
    MAX_JSON_INTEGER_DIGITS,
    MAX_MESSAGE_ATTRIBUTES,
    MAX_NUMBER_OF_MESSAGES,
    MAX_NUMBER_PRECISION,
    MAX_QUEUE_NAME_LENGTH,
    MAX_RECEIVE_COUNT,
    MAX_TAG_KEY_LENGTH,
    MAX_TAG_VALUE_LENGTH,
    MAX_TAGS_PER_QUEUE,
    MAX_VISIBILITY_TIMEOUT,
    MAX_WAIT_TIME_SECONDS,
)
from cqs.domain.validation.messages import (
    MESSAGE_SYSTEM_ATTRIBUTE_NAMES,
    message_attribute_selected,
    message_size,
    validate_message_attributes,
    validate_message_body,
    validate_message_size,
    validate_message_system_attributes,
)
from cqs.domain.validation.parameters import (
    validate_delay_seconds,
    validate_max_number_of_messages,
    validate_visibility_timeout,
    validate_wait_time_seconds,
)
from cqs.domain.validation.queues import (
    BOOLEAN_QUEUE_ATTRIBUTES,
    CHOICE_QUEUE_ATTRIBUTES,
    CREATE_ONLY_QUEUE_ATTRIBUTES,
    EXTENSION_QUEUE_ATTRIBUTES,
    FIFO_SUFFIX,
    FREE_TEXT_QUEUE_ATTRIBUTES,
    INTEGER_QUEUE_ATTRIBUTES,
    JSON_QUEUE_ATTRIBUTES,
    READABLE_QUEUE_ATTRIBUTES,
    SETTABLE_QUEUE_ATTRIBUTES,
    is_possible_queue_name,
    normalize_queue_attributes,
    validate_attribute_names_for_get,
    validate_queue_name,
)
from cqs.domain.validation.tags import (
    validate_tag_keys,
    validate_tags,
    validate_tags_given,
)
from cqs.domain.validation.text import (
    UnreadableJson,
    is_sqs_text,
    load_json,
    validate_text,
)

__all__ = [
    "BOOLEAN_QUEUE_ATTRIBUTES",
    "CHOICE_QUEUE_ATTRIBUTES",
    "CREATE_ONLY_QUEUE_ATTRIBUTES",
    "EXTENSION_QUEUE_ATTRIBUTES",
    "FIFO_ONLY_QUEUE_ATTRIBUTES",
    "FIFO_QUEUE_DEFAULTS",
    "FIFO_SUFFIX",
    "FREE_TEXT_QUEUE_ATTRIBUTES",
    "INTEGER_QUEUE_ATTRIBUTES",
    "JSON_QUEUE_ATTRIBUTES",
    "MAX_ATTRIBUTE_NAME_LENGTH",
    "MAX_ATTRIBUTE_TYPE_LENGTH",
    "MAX_BATCH_ENTRIES",
    "MAX_BATCH_ENTRY_ID_LENGTH",
    "MAX_DELAY_SECONDS",
    "MAX_FIFO_IDENTIFIER_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_JSON_INTEGER_DIGITS",
    "MAX_MESSAGE_ATTRIBUTES",
    "MAX_NUMBER_OF_MESSAGES",
    "MAX_NUMBER_PRECISION",
    "MAX_QUEUE_NAME_LENGTH",
    "MAX_RECEIVE_COUNT",
    "MAX_TAGS_PER_QUEUE",
    "MAX_TAG_KEY_LENGTH",
    "MAX_TAG_VALUE_LENGTH",
    "MAX_VISIBILITY_TIMEOUT",
    "MAX_WAIT_TIME_SECONDS",
    "MESSAGE_SYSTEM_ATTRIBUTE_NAMES",
    "READABLE_QUEUE_ATTRIBUTES",
    "SETTABLE_QUEUE_ATTRIBUTES",
    "UnreadableJson",
    "apply_encryption_attributes",
    "is_possible_queue_name",
    "is_sqs_text",
    "load_json",
    "message_attribute_selected",
    "message_size",
    "normalize_queue_attributes",
    "reported_sqs_managed_sse",
    "validate_attribute_names_for_get",
    "validate_batch_entries",
    "validate_batch_size",
    "validate_delay_seconds",
    "validate_fifo_identifier",
    "validate_fifo_requirements",
    "validate_fifo_send",
    "validate_max_number_of_messages",
    "validate_message_attributes",
    "validate_message_body",
    "validate_message_size",
    "validate_message_system_attributes",
    "validate_queue_name",
    "validate_queue_type_attributes",
    "validate_standard_send",
    "validate_tag_keys",
    "validate_tags",
    "validate_tags_given",
    "validate_text",
    "validate_visibility_timeout",
    "validate_wait_time_seconds",
]
