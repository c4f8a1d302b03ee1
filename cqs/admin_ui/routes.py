"""Every URL of the console and the handler that serves it, in one table.

Owns the route table of the admin sub-app (paths relative to `cqs.admin_ui.console.PREFIX`)
and the names of the routes that change something (the audit log's action names).
Imports aiohttp and the page modules; nothing else.
"""

from __future__ import annotations

from aiohttp import web

from cqs.admin_ui.pages import cluster, groups, login, messages, move_tasks, queue, queues


def add_routes(admin: web.Application) -> None:
    route = admin.router
    route.add_get("/", queues.queue_list, name="queues")
    route.add_get("/api/queues", queues.queue_list_json)
    route.add_get("/new-queue", queues.new_queue_form)
    route.add_post("/new-queue", queues.create_queue, name="create-queue")
    route.add_get("/queues/{name}", queue.queue_detail)
    route.add_get("/api/queues/{name}", queue.queue_detail_json)
    route.add_post("/queues/{name}/attributes", queue.set_attributes, name="set-attributes")
    route.add_post("/queues/{name}/tags", queue.tag_queue, name="tag-queue")
    route.add_post("/queues/{name}/untag", queue.untag_queue, name="untag-queue")
    route.add_post("/queues/{name}/purge", queue.purge_queue, name="purge-queue")
    route.add_get("/queues/{name}/delete", queue.delete_form)
    route.add_post("/queues/{name}/delete", queue.delete_queue, name="delete-queue")
    route.add_get("/queues/{name}/send", messages.send_form)
    route.add_post("/queues/{name}/send", messages.send_message, name="send-message")
    route.add_get("/queues/{name}/messages", messages.browse_messages)
    route.add_get("/queues/{name}/messages/{message_id}", messages.show_message)
    route.add_post(
        "/queues/{name}/move-tasks", move_tasks.start_move_task, name="start-move-task"
    )
    route.add_post(
        "/queues/{name}/move-tasks/cancel", move_tasks.cancel_move_task, name="cancel-move-task"
    )
    route.add_post("/queues/{name}/groups", groups.create_group, name="create-consumer-group")
    route.add_post(
        "/queues/{name}/groups/delete", groups.delete_group, name="delete-consumer-group"
    )
    route.add_get("/cluster", cluster.cluster_page)
    route.add_get("/api/cluster", cluster.cluster_json)
    route.add_get("/login", login.login_form)
    route.add_post("/login", login.login, name="login")
    route.add_post("/logout", login.logout, name="logout")
