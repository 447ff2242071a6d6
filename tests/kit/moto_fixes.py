"""The kit's correctness fixes to moto 5.2, applied together wherever a moto server runs, and
moto's own server CLI with them (`python -m tests.kit.moto_fixes -H 127.0.0.1 -p PORT`, what
tests/kit/service_process.py starts): DynamoDB's lost writes into a new partition
(moto_dynamodb_lock.py) and SQS's messages lost to a concurrent delete (moto rebuilt a queue's
list without its lock: moto_fast_sqs.py deletes in place under it), each a case where moto
acknowledged what AWS would have kept and then did not keep it; and SQS's FIFO deduplication
ids, which moto forgets once their message is deleted, and a FIFO group another call took
while a long poll waited, which moto hands to that poll too (moto_fast_sqs.py, which also makes
SQS calls cost no more on a deep queue)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any


def under_lock(cls: type, name: str, lock_of: Callable[[Any], AbstractContextManager[Any]]
               ) -> None:
    """Patches `cls.name` to run under `lock_of(self)`, for the whole process, once."""
    method = getattr(cls, name)
    if getattr(method, "_kit_locked", False):
        return

    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock_of(self):
            return method(self, *args, **kwargs)

    locked._kit_locked = True  # type: ignore[attr-defined]
    setattr(cls, name, locked)


def apply() -> None:
    from tests.kit import moto_dynamodb_lock, moto_fast_sqs

    moto_dynamodb_lock.apply()
    moto_fast_sqs.apply()


if __name__ == "__main__":
    apply()
    from tests.kit.long_lived_heap import freeze_survivors

    freeze_survivors()  # moto's queues and objects, kept for the run: see long_lived_heap.py
    from moto.server import main

    main(sys.argv[1:])
