"""Admin web console: an aiohttp sub-app under /admin over QueueService.

Server-rendered pages (aiohttp-jinja2) with a little JavaScript for live refresh and
charts; every change goes through `QueueService`, read-only views through
`cqs.inspection.QueueInspector`. Never imports Redis, Cassandra or an adapter.
See docs/admin.md.
"""

from admin_ui.app import PREFIX, AdminConsole, mount_admin_console
from admin_ui.auth import AdminCredentials, stored_password

__all__ = ["PREFIX", "AdminConsole", "AdminCredentials", "mount_admin_console", "stored_password"]
