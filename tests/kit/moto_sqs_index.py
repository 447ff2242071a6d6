"""The index tests/kit/moto_fast_sqs.py keeps beside each moto SQS queue's list, so that a call
finds what it needs without a pass over the queue: each message's place in moto's order, each
message group's messages in that order, every receipt handle a queued message has had, the times
messages become visible or stop being delayed, and the queue's deduplication memory (AWS's rule).
Nothing here patches moto: moto_fast_sqs.py's replacements of moto's methods keep the index in
step with the list, under the queue's own lock."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count

from moto.sqs.models import DEDUPLICATION_TIME_IN_SECONDS, Message, Queue


class Deadlines:
    """The messages whose deadline (becoming visible, or no longer delayed) is still ahead: a
    dict to count them and a heap to drop those the clock has passed (it is assumed not to run
    backwards), with no pass over the queue. A message set again keeps its latest deadline; its
    older heap entries are stale."""

    def __init__(self, passed: Callable[[float, float], bool]) -> None:
        self._passed = passed  # (deadline, now) -> the message is past it
        self._ahead: dict[Message, float] = {}
        self._heap: list[tuple[float, int, Message]] = []
        self._ties = count()

    def set(self, message: Message, at: float) -> None:
        self._ahead[message] = at
        heappush(self._heap, (at, next(self._ties), message))

    def discard(self, message: Message) -> None:
        self._ahead.pop(message, None)

    def ahead(self, now: float) -> dict[Message, float]:
        heap = self._heap
        while heap and self._passed(heap[0][0], now):
            at, _, message = heappop(heap)
            if self._ahead.get(message) == at:
                del self._ahead[message]
        return self._ahead

    def next_at(self, now: float) -> float | None:
        self.ahead(now)
        return self._heap[0][0] if self._heap else None


class DeduplicationMemory:
    """AWS's deduplication memory of a FIFO queue: when each id it accepted in the last
    DEDUPLICATION_TIME_IN_SECONDS was sent, oldest first. AWS "continues tracking the
    deduplication ID even after the message has been received and deleted" (SQS Developer Guide,
    FIFO key terms); moto checks the queued messages only."""

    def __init__(self) -> None:
        self._sent: OrderedDict[tuple[str | None, str | None], int] = OrderedDict()

    def admit(self, queue: Queue, message: Message) -> bool:
        """False for a duplicate: its id (in its group, under messageGroup scope) was accepted
        less than DEDUPLICATION_TIME_IN_SECONDS before it was sent (moto's own comparison)."""
        sent = message.sent_timestamp
        while self._sent and (sent - next(iter(self._sent.values()))) / 1000 \
                >= DEDUPLICATION_TIME_IN_SECONDS:
            self._sent.popitem(last=False)
        group = message.group_id if queue.deduplication_scope == "messageGroup" else None
        key = (group, message.deduplication_id)
        accepted = self._sent.get(key)
        # A message moved to a dead-letter queue keeps its send time, so an entry past the window
        # may still sit behind a newer one: the age is checked, not only the presence.
        if accepted is not None and (sent - accepted) / 1000 < DEDUPLICATION_TIME_IN_SECONDS:
            return False
        self._sent.pop(key, None)
        self._sent[key] = sent
        return True


class QueueIndex:
    """A queue's messages as moto's list (`source`) holds them, indexed; every change to either
    goes through here, under the queue's lock, so the two stay in step."""

    def __init__(self, source: list[Message], deduplication: DeduplicationMemory) -> None:
        self.source, self.deduplication = source, deduplication
        self.place: dict[Message, int] = {}
        # OrderedDict: its iteration follows links, so deletes at the front leave no slots to skip.
        self.groups: dict[str | None, OrderedDict[Message, None]] = {}
        self.by_handle: dict[str, Message] = {}
        self.invisible = Deadlines(lambda at, now: now > at)  # Message.visible
        self.delayed = Deadlines(lambda at, now: now >= at)  # not Message.delayed
        self._places = count()
        for message in source:
            self._index(message)

    def append(self, message: Message) -> None:
        self.source.append(message)
        self._index(message)

    def _index(self, message: Message) -> None:
        self.place[message] = next(self._places)
        self.groups.setdefault(message.group_id, OrderedDict())[message] = None
        for handle in message.all_receipt_handles:
            if handle is not None:
                self.by_handle[handle] = message
        if message.visible_at:
            self.invisible.set(message, message.visible_at)
        if message.delayed_until:
            self.delayed.set(message, message.delayed_until)

    def remove(self, message: Message) -> None:
        self.source.remove(message)  # a walk from the front, where FIFO consumers delete
        del self.place[message]
        members = self.groups[message.group_id]
        del members[message]
        if not members:
            del self.groups[message.group_id]
        for handle in message.all_receipt_handles:
            self.by_handle.pop(handle, None)  # type: ignore[arg-type]
        self.invisible.discard(message)
        self.delayed.discard(message)

    def received(self, message: Message) -> None:
        """After moto's mark_received: a new receipt handle, maybe a new visible_at."""
        self.by_handle[message.receipt_handle] = message  # type: ignore[index]
        if message.visible_at:
            self.invisible.set(message, message.visible_at)

    def hidden(self, now: float) -> int:
        """How many messages are not visible or delayed (moto's Queue.messages leaves them out)."""
        invisible = self.invisible.ahead(now)
        return len(invisible) + sum(1 for m in self.delayed.ahead(now) if m not in invisible)


def index_of(queue: Queue) -> QueueIndex:
    """The queue's index (call under the queue's lock), built from moto's list when that list is
    new to it: a queue made before moto_fast_sqs.apply(), or emptied by PurgeQueue (which assigns
    an empty list). The deduplication memory outlives a purge (AWS documents no reset)."""
    index: QueueIndex | None = queue.__dict__.get("_kit_index")
    if index is None or index.source is not queue._messages:
        index = queue._kit_index = QueueIndex(  # type: ignore[attr-defined]
            queue._messages, index.deduplication if index is not None else DeduplicationMemory())
    return index
