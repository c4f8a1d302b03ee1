"""Admin web console: an aiohttp sub-app under /admin over QueueService."""
