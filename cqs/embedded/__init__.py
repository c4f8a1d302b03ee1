"""Launchers for the real services cqs runs on (Redis, Cassandra), as child processes.

Used by the CLI's embedded mode and by the test fixtures. Must not import the service,
the adapters or aiohttp.
"""
