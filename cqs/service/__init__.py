"""The service layer: `QueueService` (one async method per SQS action) and, one module
each, the mechanisms it coordinates.

- `service`: QueueService and ServiceTuning; composes the others;
- `queue_directory`: queue metadata cached in this process, ARNs of this service;
- `access`: whether a caller may do an action to a queue (`QueueService.access`), from
  the owner rules and the queue's Policy (`cqs.domain.access_policy`);
- `queues`: create/list/delete/purge queues, attributes, tags, permissions;
- `messages`: building messages from sends, what a receive returns (pure);
- `sending` and `fifo`: the store-then-cache order of a send; FIFO admission and numbering;
- `receiving`: ReceiveMessage, one path for standard and FIFO queues, with long polling
  (`long_poll`);
- `in_flight`: DeleteMessage and ChangeMessageVisibility through receipt handles;
- `cache_fill`: the cache state machine (fills, stale caches, Return-From-Cassandra) and
  the delivery log that keeps deliveries hidden through a Redis loss;
- `dead_letters` and `move_tasks`: RedrivePolicy applied, message move tasks;
- `consumed` and `replays`: copies of consumed messages kept and read back; a replay of
  them, resumable from its durable cursor;
- `pagination`: ListQueues / ListDeadLetterSourceQueues tokens;
- `chores`: periodic upkeep; `housekeeping`: when each chore runs in an API process;
- `clock`: the offset clock the service reads (tests may advance it);
- `inspection`: the read-only `QueueInspector` over the storage ports, for the console.

Imports go one way: the API and the admin console import this package; it imports model,
errors, validation, the pure rule modules and the ports, never an adapter, aiohttp or a
driver.
"""

from cqs.domain.model import MessageAttributeValue
from cqs.service.access import QueueAccess
from cqs.service.messages import new_message_id
from cqs.service.queues import COUNT_ATTRIBUTES
from cqs.service.service import QueueService, ServiceTuning

__all__ = [
    "COUNT_ATTRIBUTES",
    "MessageAttributeValue",
    "QueueAccess",
    "QueueService",
    "ServiceTuning",
    "new_message_id",
]
