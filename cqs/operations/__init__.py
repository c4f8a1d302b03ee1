"""Operator commands that are not the API server itself: `cqs rebalance`, `cqs migrate`,
the worker supervisor of `cqs serve --workers N`, and starting the embedded services.

`cqs.main` parses the command line, builds what a command needs and starts it here. These
modules never import an adapter (the composition root hands them in), aiohttp or the service.
"""
