"""Admin web console: an aiohttp sub-app under /admin over QueueService.

Server-rendered pages (aiohttp-jinja2) with a little JavaScript for live refresh and
charts; every change goes through `QueueService`, read-only views through the
`cqs.ports.QueueInspector` port. Never imports a storage port, Redis, Cassandra or an
adapter.
See docs/admin.md.
"""

from cqs.admin_ui.app import mount_admin_console
from cqs.admin_ui.console import PREFIX, AdminConsole
from cqs.admin_ui.users import PASSWORD_FILE_NAME, AdminCredentials, ConsoleUsers, stored_password

__all__ = [
    "PASSWORD_FILE_NAME",
    "PREFIX",
    "AdminConsole",
    "AdminCredentials",
    "ConsoleUsers",
    "mount_admin_console",
    "stored_password",
]
