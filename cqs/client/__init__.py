"""What a client program imports to call cqs beyond what the SQS SDKs know.

Owns `ExtensionClient` (in `extensions`): cqs's actions beyond SQS (peek, replay, consumer
groups, timer messages), signed as boto3 signs SQS calls; `ExtensionError` is its error.
Callers write `from cqs.client import ExtensionClient`.

A client runs on machines that have no server: this package imports botocore, urllib3 and
the standard library, never another package of cqs (checked by `.importlinter`).
"""

from cqs.client.extensions import ExtensionClient, ExtensionError

__all__ = ["ExtensionClient", "ExtensionError"]
