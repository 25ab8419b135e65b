"""Python's cyclic garbage collector paused for work that allocates many objects and frees almost none of them
in cycles (a fresh process's module imports, an IR import): every collection those allocations trigger walks
the growing heap for nothing."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def cycle_collection_paused(pause: bool = True):
    """Run the block with the cyclic collector off; left as it was when `pause` is false or it is off already
    (a nested pause does not turn it back on early)."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
