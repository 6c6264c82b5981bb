"""Basra: the rules engine, the gRPC service and a client, in one namespace.

- ``basra.engine``: the rules (pure, standard library only, no I/O).
- ``basra.service``: the stateless gRPC service over an embedded or Redis store.
- ``basra.client``: the Python client of the contract (and the demo and terminal player).
- ``basra.v1``: the stubs generated from ``proto/basra/v1`` by ``make``.
"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("basra-engine")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0+unknown"
