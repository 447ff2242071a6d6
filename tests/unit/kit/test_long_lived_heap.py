"""tests/kit/long_lived_heap.py: a stand-in's state survives one full collection and is then
out of the next ones' walk; what it drops is still freed. In a process of its own: the hook
stays for the life of the process that installs it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc
from tests.kit.long_lived_heap import freeze_survivors
freeze_survivors()
freeze_survivors()  # idempotent: one hook
items = {i: {"pk": {"S": str(i)}, "refs": [i]} for i in range(50_000)}
gc.collect()
frozen = gc.get_freeze_count()
walked = len(gc.get_objects())  # what a full collection walks now
del items  # dropped by the stand-in: freed by reference counting, frozen or not
print(len(gc.callbacks), frozen, walked, gc.get_freeze_count())
"""


def test_what_survives_a_full_collection_is_frozen_and_still_freed_when_dropped() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True).stdout.split()
    hooks, frozen, walked, after_drop = map(int, out)
    assert hooks == 1
    assert frozen >= 100_000  # each item's dict and its list
    assert walked < 1_000
    assert after_drop < frozen - 100_000
