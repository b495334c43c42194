"""Handing the memory Arrow's allocator keeps back to the system, batch after batch.

Which allocator that is: the system's under ``tgt validate`` (cli/_process.py), else pyarrow's
default (mimalloc); ``release_unused`` trims either.
"""

from __future__ import annotations

import pyarrow as pa


def release_unused_memory() -> None:
    """Hand the memory Arrow's allocator keeps after a batch or a part back to the system.

    Allocators keep freed pages for reuse, per thread; part after part the kept pages pile up
    (more on machines with many cores), so without this validate's peak RSS grew with the
    number of parts, i.e. with the number of graphs.
    """
    pa.default_memory_pool().release_unused()
