"""The revisibility worker: returns due in-flight messages and releases delayed ones.

A loop over the ports; runs in-process or as its own process. Must not import an adapter,
aiohttp or the API.
"""

from cqs.revisibility_worker.worker import RevisibilityWorker

__all__ = ["RevisibilityWorker"]
