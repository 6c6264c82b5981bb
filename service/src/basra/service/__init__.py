"""The Basra gRPC service and the ``basra-engine`` command.

Depends on ``engine``, never the reverse.

The HTTP port's server (granian) allocates with its own jemalloc, configured from
``_RJEM_MALLOC_CONF`` when it first allocates, so the service sets it here, before any of its
modules imports granian: with a background thread, jemalloc gives the memory an attack's
connections took back to the system within seconds of their leaving, where without one it
keeps it for reuse and repeated waves of attack grow the process wave after wave. An operator's
own value of the variable is kept.
"""

import os

os.environ.setdefault("_RJEM_MALLOC_CONF", "background_thread:true")
