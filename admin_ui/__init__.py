"""Admin web console: an aiohttp sub-app under /admin over QueueService.

Server-rendered pages (aiohttp-jinja2) with a little JavaScript for live refresh and
charts; every change goes through `QueueService`, read-only views through the
`cqs.ports.QueueInspector` port. Never imports a storage port, Redis, Cassandra or an
adapter.
See docs/admin.md.
"""

from admin_ui.app import mount_admin_console
from admin_ui.auth import AdminCredentials, stored_password
from admin_ui.console import PREFIX, AdminConsole

__all__ = ["PREFIX", "AdminConsole", "AdminCredentials", "mount_admin_console", "stored_password"]
