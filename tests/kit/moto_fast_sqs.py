"""A performance extension of moto 5.2's SQS, with one correctness fix: a call no longer costs a
pass over the queue (a ReceiveMessage costs the queue's message groups and what it returns, the
other calls what they touch); and a FIFO queue remembers a deduplication id for 5 minutes, as AWS
does, whether or not its message was deleted.

Why: moto keeps a queue as one list and answers by passing over it. `add_message` scans it for
a duplicate deduplication id; `receive_message` lists every visible message (`Queue.messages`)
and walks them, skipping the messages of groups in flight one by one, and checks each message it
returns for retention through `get_queue_attributes`, which builds `Queue.attributes` three
times, each counting the visible, in-flight and delayed messages by a pass of its own (sending
reads `Queue.attributes` three times a message too, and each read also converts its 18 names to
snake case: 1.3 ms at any depth); `delete_message` and `change_message_visibility` search the
list for the receipt handle; a long poll whose visible messages all belong to groups in flight
runs pass after pass, without waiting, until its time is up. In bench.chain_speed (10 minutes of
a real NameNode at ~1,400 events/s), once the event queue had a backlog the moto server took
42-47 % of a core, a ReceiveMessage 248-318 ms, and the chain never caught up; AWS's SQS does
not slow with depth.
And moto forgets a deduplication id when its message is deleted (it checks the queued messages
only) and ignores DeduplicationScope. AWS drops a message whose id was accepted less than 5
minutes (DEDUPLICATION_TIME_IN_SECONDS) before, delivered and deleted or not, in the queue or,
with DeduplicationScope=messageGroup, in the same group. The consumer relies on it: a continue
request sent again with the same key within 5 minutes is dropped even after the first was
received and deleted (lambdas/ingest/apply_queue.py).

What changes: beside each queue's list, which stays moto's (same messages, same order), an index
(tests/kit/moto_sqs_index.py) kept in step under the queue's own lock. The receipt handle is
looked up, the approximate counts are read off heaps of when messages become visible or
undelayed, the snake-case names are cached, and the pass of `receive_message` runs moto's own
loop body over just the messages moto's pass acts on, in its order: the in-flight messages
visible again (moto frees each and re-reads which groups are in flight) and, merged by place,
each group's visible undelayed messages while the group is not in flight when its turn comes.
The messages moto's pass skips there (a blocked group's, invisible, delayed ones) do nothing, so
the answers, down to message ids and receipt handles, are moto's. Between passes a long poll
waits for a send, a visibility change or the next time a message becomes visible or undelayed
(at most 1 s, as moto's own wait) instead of spinning. A delete removes the message from the
list in place (a FIFO consumer deletes near the front) under the queue's lock: moto's own
rebuilt the list without it, and a message sent meanwhile was lost (one of ~3,700 in a 120 s
bench.chain_speed run: answered Successful, never received;
test_concurrent_senders_and_consumers_lose_and_repeat_nothing).
Deduplication (FIFO queues, where moto deduplicates): the index's memory of the ids accepted in
the last 5 minutes, by group under messageGroup scope, replaces moto's scan; where moto and AWS
agree (the earlier message still queued, in the same group or under queue scope) the answer is
moto's. tests/unit/kit/test_moto_fast_sqs.py runs the same calls, scripted and seeded at random,
on moto as shipped and with this module, compares the answers field by field, and shows moto's
deduplication gap and the fix.

Kept as moto has it (the tests compare them): a long poll reads which groups are in flight when
it starts and re-reads only when it frees an in-flight message visible again, so a group freed by
a delete meanwhile waits for the next call (but a group another call takes while the poll waits
is added: moto would hand its next message to this poll too, two of a group in flight, which
AWS never does); several messages of one group may come in one call,
and a freed message may come after a later one of its group; a message past its retention period
is received (counted, in flight) but not returned, and ends the pass; the receipt handles of
deleted messages are kept for ever (deleting again succeeds). Assumed: moto's clock does not run
backwards (the counts drop deadlines once passed).

Scope: `apply()` patches moto's SQS Queue and SQSBackend classes and its models module's
camelcase_to_underscores for the whole process, once (a second call does nothing); it carries a
correctness fix, so tests/kit/moto_fixes.py applies it wherever a moto server runs, and
in-process moto (`mock_aws`) in that process gets it too. Queues made before it, or emptied by
PurgeQueue (a new list), are indexed when next used. `REPLACED` names what it replaces; each
replacement's `__wrapped__` is moto's own.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from copy import deepcopy
from heapq import heapify, heappop, heappush
from typing import Any

from moto.sqs import models
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import (
    Message,
    Queue,
    SQSBackend,
    _filter_message_attributes,
    sqs_backends,
)

from tests.kit.moto_sqs_index import QueueIndex, index_of

_applied = False


# --- Queue -----------------------------------------------------------------------------------
def _add_message(self: Queue, message: Message) -> None:
    with self._messages_lock:
        index = index_of(self)
        # moto's condition for deduplicating; the memory instead of its scan of the queue.
        if self.fifo_queue and (self.content_based_deduplication or message.deduplication_id) \
                and not index.deduplication.admit(self, message):
            return
        index.append(message)
        self._messages_lock.notify_all()
    _feed_lambda_mappings(self)


def _feed_lambda_mappings(queue: Queue) -> None:
    """moto's own tail of Queue.add_message, unchanged: each enabled Lambda event source mapping
    (moto runs the function in Docker; the kit's mappings are disabled) gets a batch."""
    for arn, esm in queue.lambda_event_source_mappings.items():
        if not esm.enabled:
            continue
        backend = sqs_backends[queue.account_id][queue.region]
        messages = backend.receive_message(queue.name, esm.batch_size,
                                           queue.receive_message_wait_time_seconds,  # type: ignore[attr-defined]
                                           queue.visibility_timeout)  # type: ignore[attr-defined]
        from moto.awslambda.utils import get_backend

        if get_backend(queue.account_id, queue.region).send_sqs_batch(arn, messages, queue.queue_arn):
            for m in messages:
                backend.delete_message(queue.name, m.receipt_handle)  # type: ignore[arg-type]
        else:
            for m in messages:
                backend.change_message_visibility(queue.name, m.receipt_handle,  # type: ignore[arg-type]
                                                  visibility_timeout=0)


def _delete_message(self: Queue, receipt_handle: str) -> None:
    with self._messages_lock:
        if receipt_handle in self.deleted_messages:
            return  # moto: deleting again succeeds
        index = index_of(self)
        message = index.by_handle.get(receipt_handle)
        if message is None:
            raise ReceiptHandleIsInvalid()
        self.pending_messages.discard(message)
        self.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]
        index.remove(message)


def _approximately(count: Callable[[QueueIndex, float], int]) -> Callable[[Queue], int]:
    """One of moto's approximate counts, read off the index at the clock's now."""
    def approximate(self: Queue) -> int:
        with self._messages_lock:
            return count(index_of(self), models.unix_time_millis())
    return approximate


# moto: len(self.messages), the visible undelayed ones; those not visible; those delayed.
_approximate_number_of_messages = _approximately(
    lambda index, now: len(index.source) - index.hidden(now))
_approximate_number_of_messages_not_visible = _approximately(
    lambda index, now: len(index.invisible.ahead(now)))
_approximate_number_of_messages_delayed = _approximately(
    lambda index, now: len(index.delayed.ahead(now)))


# --- SQSBackend ------------------------------------------------------------------------------
def _receive_message(self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int,
                     visibility_timeout: int, message_attribute_names: list[str] | None = None,
                     ) -> list[Message]:
    """moto's receive_message: the same passes, each over what it acts on (`_moto_order`)."""
    names = message_attribute_names or []
    queue = self.get_queue(queue_name)
    result: list[Message] = []
    polling_end = models.unix_time() + wait_seconds_timeout
    with queue._messages_lock:
        # moto reads the groups in flight once a call (deepcopy of pending_message_groups).
        blocked = set(queue.pending_message_groups)
        while not (result or (wait_seconds_timeout and models.unix_time() > polling_end)):
            stopped = _receive_pass(queue, count, visibility_timeout, names, blocked, result)
            if not visibility_timeout:  # received yet visible: a waiting poll's pass frees them
                queue._messages_lock.notify_all()
            if result or not wait_seconds_timeout:
                break
            if not stopped:  # moto passes again at once after a stop: what it stopped short of
                queue._messages_lock.wait(_until_next_change(index_of(queue), polling_end))
                # Not moto's: a group another call took while this one waited is in flight, and
                # AWS gives none of its messages to a second consumer meanwhile. moto's copy
                # from the call's start would: two of a group in flight, received out of order
                # (test_concurrent_senders_and_consumers_lose_and_repeat_nothing).
                blocked.update(queue.pending_message_groups)
    return result


def _receive_pass(queue: Queue, count: int, visibility_timeout: int, names: list[str],
                  blocked: set[str], result: list[Message]) -> bool:
    """One pass of moto's loop, its body unchanged; True if it stopped at a message past its
    retention period (moto's `break` after marking the message received)."""
    index = index_of(queue)
    messages_to_dlq: list[Message] = []
    stopped = False
    for message in _moto_order(queue, index, blocked):
        if message in queue.pending_messages:
            # The message is pending but is visible again: the consumer timed out. (moto rebinds
            # a deepcopy; updated in place, _moto_order reads it.)
            queue.pending_messages.remove(message)
            blocked.clear()
            blocked.update(queue.pending_message_groups)
        if message.group_id and queue.fifo_queue and message.group_id in blocked:
            continue
        if (queue.dead_letter_queue is not None and queue.redrive_policy
                and message.approximate_receive_count >= queue.redrive_policy["maxReceiveCount"]):
            messages_to_dlq.append(message)
            continue
        queue.pending_messages.add(message)
        message.mark_received(visibility_timeout=visibility_timeout)
        index.received(message)
        message_copy = deepcopy(message)
        _filter_message_attributes(message_copy, names)
        # moto's is_message_valid_based_on_retention_period, without its get_queue_attributes.
        if queue.message_retention_period + message.sent_timestamp / 1000 \
                <= models.unix_time():  # type: ignore[attr-defined,operator]
            stopped = True
            break
        result.append(message_copy)
        if len(result) >= count:
            break
    for message in messages_to_dlq:
        index.remove(message)
        queue.dead_letter_queue.add_message(message)  # type: ignore[union-attr]
    return stopped


def _moto_order(queue: Queue, index: QueueIndex, blocked: set[str]) -> Iterator[Message]:
    """The messages moto's pass over `Queue.messages` acts on, in its order: the in-flight
    messages visible again (moto frees each and re-reads the groups in flight into `blocked`
    while this generator waits at the yield) and, merged by place, each group's visible undelayed
    messages from when its group is not in `blocked` at its turn. Which message a group offers
    next is read when its previous one is taken, before any later place is acted on."""
    pending, fifo = queue.pending_messages, queue.fifo_queue
    # (place, message, the rest of its group; None for an in-flight message visible again)
    heap: list[tuple[int, Message, Iterator[Message] | None]] = [
        (index.place[m], m, None) for m in pending if m.visible and not m.delayed]
    heapify(heap)
    parked: set[str] = set()  # groups blocked at their turn, rejoining when no longer blocked

    def offer(rest: Iterator[Message]) -> None:
        message = next(rest, None)
        if message is not None:
            heappush(heap, (index.place[message], message, rest))

    def follow(group: str | None, after: int) -> None:
        offer(m for m in index.groups[group] if index.place[m] > after and m not in pending
              and m.visible and not m.delayed)

    for group in index.groups:
        if fifo and group and group in blocked:
            parked.add(group)
        else:
            follow(group, -1)
    while heap:
        place, message, rest = heappop(heap)
        if rest is None:
            yield message
            for group in [g for g in parked if g not in blocked]:
                parked.remove(group)
                follow(group, place)
        elif fifo and message.group_id and message.group_id in blocked:
            parked.add(message.group_id)
        else:
            yield message
            offer(rest)


def _until_next_change(index: QueueIndex, polling_end: float) -> float:
    """Seconds a long poll may wait before a pass could find more (a send or a visibility change
    notifies it sooner): at most 1 s, as moto's wait_for_messages, and no later than the end of the
    poll or the next time a message becomes visible or undelayed."""
    now = models.unix_time_millis()
    wait = min(1.0, polling_end - now / 1000)
    for deadlines in (index.invisible, index.delayed):
        at = deadlines.next_at(now)
        if at is not None:
            wait = min(wait, (at - now) / 1000)
    return max(wait, 0.0)


def _change_message_visibility(self: SQSBackend, queue_name: str, receipt_handle: str,
                               visibility_timeout: int) -> None:
    """moto's, with the receipt handle looked up instead of searched for."""
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        index = index_of(queue)
        message = index.by_handle.get(receipt_handle)
        if message is None:
            raise ReceiptHandleIsInvalid
        visibility_timeout_msec = int(visibility_timeout) * 1000
        given_visibility_timeout = models.unix_time_millis() + visibility_timeout_msec
        if given_visibility_timeout - message.sent_timestamp > 43200 * 1000:  # type: ignore[operator]
            raise InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
                "VisibilityTimeout for the message is beyond the limit [43200 seconds]"
            )
        message.change_visibility(visibility_timeout)
        index.invisible.set(message, message.visible_at)
        if message.visible and message in queue.pending_messages:
            queue.pending_messages.remove(message)
        queue._messages_lock.notify_all()  # a long poll waiting for a deadline reads the new one


REPLACED: dict[tuple[Any, str], Any] = {
    # Queue.attributes converts the same 18 attribute names to snake case on every call, three
    # times for each message sent: 1.3 ms a call in pure string work, whatever the depth.
    (models, "camelcase_to_underscores"): functools.cache(models.camelcase_to_underscores),
    (Queue, "add_message"): _add_message,
    (Queue, "delete_message"): _delete_message,
    (Queue, "approximate_number_of_messages"): _approximate_number_of_messages,
    (Queue, "approximate_number_of_messages_not_visible"): _approximate_number_of_messages_not_visible,
    (Queue, "approximate_number_of_messages_delayed"): _approximate_number_of_messages_delayed,
    (SQSBackend, "receive_message"): _receive_message,
    (SQSBackend, "change_message_visibility"): _change_message_visibility,
}


def apply() -> None:
    """Patch moto's SQS Queue and SQSBackend (and a helper of their module) for this process
    (idempotent)."""
    global _applied
    if _applied:
        return
    for (owner, name), replacement in REPLACED.items():
        own = owner.__dict__[name]
        if isinstance(own, property):
            replacement.__wrapped__ = own.fget
            setattr(owner, name, property(replacement))
        else:
            # Past any wrapper: moto's own.
            replacement.__wrapped__ = inspect.unwrap(own)
            setattr(owner, name, replacement)
    _applied = True
