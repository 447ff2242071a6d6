"""tests/kit/moto_sqs_lock.py: a message sent while moto deletes another is kept.

moto's `Queue.delete_message` passes over the queue's list and then replaces it; a send that
lands between the two is lost. The GIL rarely passes there on its own (a 120 s chain run lost one
message of ~3,700), so the test holds the pass open at its end, as a preempted thread would, and
sends from another thread meanwhile: moto's own method loses the message, the fixed one keeps it
(the send waits for the delete)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from moto.sqs.models import Message, Queue

from tests.kit import moto_sqs_lock

HOLD_S = 0.5


class HeldOpenAtItsEnd(list):  # type: ignore[type-arg]
    """A list whose first full pass, in the thread that makes it, runs `at_end` before ending."""

    def __init__(self, items: list[Any], at_end: Callable[[], None]) -> None:
        super().__init__(items)
        self._at_end: Callable[[], None] | None = at_end
        self._thread = threading.current_thread()

    def __iter__(self) -> Iterator[Any]:
        yield from super().__iter__()
        if self._at_end is not None and threading.current_thread() is self._thread:
            at_end, self._at_end = self._at_end, None
            at_end()


def message(name: str) -> Message:
    m = Message(name, "{}")
    m.group_id, m.deduplication_id = "g", name
    return m


def sent_during_a_delete_is_kept(delete: Callable[[Queue, str], None]) -> bool:
    queue = Queue("q.fifo", "eu-west-1", "123456789012", FifoQueue="true")
    old, new = message("old"), message("new")
    old.mark_received()
    sender = threading.Thread(target=queue.add_message, args=(new,))

    def send_meanwhile() -> None:
        sender.start()
        sender.join(HOLD_S)  # done at once unless the delete holds the queue's lock

    queue._messages = HeldOpenAtItsEnd([old], send_meanwhile)
    delete(queue, old.receipt_handle)
    sender.join()
    return [m.id for m in queue._messages] == ["new"]


def test_moto_loses_a_message_sent_while_it_deletes() -> None:
    unfixed = getattr(Queue.delete_message, "__wrapped__", Queue.delete_message)
    assert not sent_during_a_delete_is_kept(unfixed)


def test_with_the_fix_the_send_waits_and_the_message_is_kept() -> None:
    moto_sqs_lock.apply()
    assert Queue.delete_message.__wrapped__ is not None
    assert sent_during_a_delete_is_kept(Queue.delete_message)
