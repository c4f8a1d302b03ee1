"""SQS's numeric limits: the quotas of the AWS SQS API reference and developer guide, and the
bounds on JSON from clients.

Owns the numbers only; the rules that apply them live beside what they check. Imports
nothing.
"""

from __future__ import annotations

MAX_QUEUE_NAME_LENGTH = 80
MAX_DELAY_SECONDS = 900
MAX_VISIBILITY_TIMEOUT = 43_200
MAX_WAIT_TIME_SECONDS = 20
MAX_NUMBER_OF_MESSAGES = 10
MAX_BATCH_ENTRIES = 10
MAX_BATCH_ENTRY_ID_LENGTH = 80
MAX_MESSAGE_ATTRIBUTES = 10
MAX_ATTRIBUTE_NAME_LENGTH = 256
MAX_ATTRIBUTE_TYPE_LENGTH = 256
MAX_NUMBER_PRECISION = 38
MAX_TAGS_PER_QUEUE = 50
MAX_TAG_KEY_LENGTH = 128
MAX_TAG_VALUE_LENGTH = 256
MAX_RECEIVE_COUNT = 1000
MAX_FIFO_IDENTIFIER_LENGTH = 128
# JSON from a client (a request body, a Policy): no SQS document comes near these, and they
# keep parsing and reading it cheap and free of RecursionError.
MAX_JSON_DEPTH = 64
MAX_JSON_INTEGER_DIGITS = 40
