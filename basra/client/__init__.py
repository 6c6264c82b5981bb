"""The Python client of the ``basra.v1`` contract, and the programs built on it (the demo and the
terminal player). A user of the contract, not a part of the server."""
