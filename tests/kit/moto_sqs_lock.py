"""A correctness fix for moto 5.2's SQS behind a threaded server: a DeleteMessage no longer
drops a message sent while it runs.

Why: `Queue.delete_message` rebuilds the queue's list without the message being deleted
(`new_messages = [...]` from a pass over `self._messages`, then `self._messages = new_messages`)
without taking the queue's `_messages_lock`, while `Queue.add_message` appends under that lock.
A message appended after the pass and before the assignment is gone: SendMessageBatch answered
it as Successful, and no ReceiveMessage ever returns it. ThreadedMotoServer serves each request in
a thread of its own, and the chain deletes what its consumers processed while the agent sends,
so at ~40 messages/s (bench.chain_speed with 100 ms drains) one run lost a message of 37 events:
the agent's checkpoint passed it (acknowledged), the lake never had it, and the index waited at
the range that named it for the rest of the run (807 entries differ in verify).
tests/unit/kit/test_moto_sqs_lock.py holds the pass open and shows the loss in moto's own Queue
and none with this fix.

What changes: nothing in what moto answers; `delete_message` runs under the queue's own lock
(a threading.Condition over an RLock, which add_message and long polls already use), so a send
waits for a delete's few microseconds. AWS's SQS never loses an acknowledged message, which is
what the agent's checkpoint and the index's exactly-once proof assume.

Scope: `apply()` patches the class for the whole process, once; every place that starts a moto
server calls it first, through tests/kit/moto_fixes.py.
"""

from __future__ import annotations

from moto.sqs.models import Queue

from tests.kit.moto_fixes import under_lock


def apply() -> None:
    """Delete messages under each queue's own lock in this process (idempotent)."""
    under_lock(Queue, "delete_message", lambda queue: queue._messages_lock)
