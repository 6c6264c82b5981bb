"""The Basra gRPC service and the ``basra-engine`` command.

Depends on ``engine``, never the reverse.
"""
