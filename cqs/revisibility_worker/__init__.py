"""The revisibility worker: returns due in-flight messages and releases delayed ones."""

from cqs.revisibility_worker.worker import RevisibilityWorker

__all__ = ["RevisibilityWorker"]
