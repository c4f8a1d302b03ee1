"""Operator commands that are not the API server itself: `cqs rebalance`, `cqs migrate`,
the worker supervisor of `cqs serve --workers N`, starting the embedded services, and the
TLS contexts read from the operator's PEM files (`tls`, `tls_settings`).

`cqs.main` parses the command line, builds what a command needs and starts it here. These
modules never import an adapter (the composition root hands them in), aiohttp or the service.
"""
