"""Stand-ins that hold a service's state for a whole run (the DynamoDB double's items, moto's
queues and objects) are Python heaps that only grow, and every full collection of Python's
garbage collector walks every live container object. In a 10-minute bench.chain_speed run the
DynamoDB double, holding about a million items, stopped for 1.3-1.4 s twice, and the bench's
events in flight waited on a pause no DynamoDB has (docs/bench.md, session 36).

`freeze_survivors()` freezes (gc.freeze) what survives each full collection, so the next walks
only what is newer. A frozen object is still freed when its last reference goes (the items a
stand-in replaces or deletes hold no cycles); only a cycle that dies after it was frozen stays,
which a test or bench process can afford and a product process cannot: the consumer and the
agent freeze only what their start made (lambdas/ingest/handler.py, onprem_agent)."""

from __future__ import annotations

import gc
from typing import Any

_installed = False


def freeze_survivors() -> None:
    """Freeze what survives each full collection from now on, in this process (idempotent)."""
    global _installed
    if _installed:
        return

    def after(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.callbacks.append(after)
    _installed = True
