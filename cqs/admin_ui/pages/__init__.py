"""The console's pages, one module per page or group of pages (`routes.py` lists their
URLs); `common` holds what they share. Pages talk to `QueueService` and the read-only
`QueueInspector` port, never to a storage port or an adapter."""
