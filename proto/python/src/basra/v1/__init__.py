"""The stubs of the ``basra.v1`` contract (``proto/basra/v1``), generated here by ``make``."""
