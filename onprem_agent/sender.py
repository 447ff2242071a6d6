"""Sends packed messages to the SQS FIFO queue: SendMessageBatch, retries, backpressure.

Ordering. SQS FIFO keeps each message group in the order messages were accepted. A failed entry
that is retried later must therefore not be overtaken by a later message of its group, so this
sender never has more than one message of a group in flight: a batch holds at most one message
per group, a group whose message is in flight or waiting out a backoff is skipped, and a failed
message goes back to the head of its group's queue. Different groups are sent in parallel, up
to `max_in_flight_batches` SendMessageBatch calls at once.

Retries. botocore's `standard`/`adaptive` retry mode retries whole calls (throttling, 5xx,
connection errors) with backoff; on top of it, every entry in a response's `Failed` list is
retried with exponential backoff and jitter, and so is a whole batch whose call still failed
after botocore gave up on a transient error. Nothing is dropped: a message is either
acknowledged by SQS or still queued here. Errors that no retry can fix (access denied, no such
queue, invalid or oversized message: any 4xx that is not throttling, and entries SQS marks
SenderFault) stop the sender with a PermanentSendError.

Backpressure. `wait_for_capacity()` blocks the source while more than `max_pending_messages`
messages are queued or in flight.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hdfs_events.envelope import SQS_MAX_MESSAGE_BYTES
from onprem_agent.config import AgentConfig
from onprem_agent.packer import PackedMessage

log = logging.getLogger(__name__)

MAX_BATCH_ENTRIES = 10  # SQS SendMessageBatch limit
# Error codes that are worth retrying even though SQS reports them as the caller's (4xx or
# SenderFault): throttling and server-side hiccups.
TRANSIENT_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled",
    "RequestThrottledException", "TooManyRequestsException", "RequestLimitExceeded",
    "ProvisionedThroughputExceededException", "KmsThrottled",
    "InternalError", "InternalFailure", "ServiceUnavailable", "RequestTimeout",
    "RequestTimeoutException", "AWS.SimpleQueueService.InternalError",
})
_BASE_BACKOFF_S = 0.05


class PermanentSendError(RuntimeError):
    """SQS refused the messages for a reason a retry cannot fix; the agent must stop."""


Ack = Callable[[PackedMessage], None]


class Sender(Protocol):
    """What the pipeline needs from a sender."""

    def start(self, on_ack: Ack) -> None: ...

    def wait_for_capacity(self, stop: threading.Event | None = None) -> None: ...

    def has_capacity(self) -> bool: ...

    def waiting(self, group_id: str) -> bool:
        """Whether a message of the group is queued or in flight (packer.expired)."""
        ...

    def enqueue(self, message: PackedMessage) -> None: ...

    def flush(self, timeout: float | None = None) -> bool: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class SenderStats:
    messages: int = 0  # acknowledged by SQS
    events: int = 0
    batches: int = 0  # SendMessageBatch calls that returned
    billed_requests: int = 0  # 64 KiB chunks of the batch calls that returned
    retried_entries: int = 0
    failed_calls: int = 0


class NoopSender:
    """Acknowledges every message at once without sending it: measures the agent's own cost."""

    def __init__(self) -> None:
        self.stats = SenderStats()
        self._on_ack: Ack | None = None

    def start(self, on_ack: Ack) -> None:
        self._on_ack = on_ack

    def wait_for_capacity(self, stop: threading.Event | None = None) -> None:
        return None

    def has_capacity(self) -> bool:
        return True

    def waiting(self, group_id: str) -> bool:
        return False

    def enqueue(self, message: PackedMessage) -> None:
        self.stats.messages += 1
        self.stats.events += message.wire.event_count
        assert self._on_ack is not None, "start() first"
        self._on_ack(message)

    def flush(self, timeout: float | None = None) -> bool:
        return True

    def close(self) -> None:
        return None


class SqsSender:
    def __init__(self, queue_url: str, client: Any = None, *, max_in_flight_batches: int = 4,
                 retry_mode: str = "adaptive", max_attempts: int = 5,
                 max_backoff_s: float = 20.0, max_pending_messages: int | None = None) -> None:
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client("sqs", config=Config(
                retries={"mode": retry_mode, "max_attempts": max_attempts},
                max_pool_connections=max_in_flight_batches + 2,
            ))
        self.queue_url, self._client = queue_url, client
        self._workers_count = max_in_flight_batches
        self._max_backoff = max_backoff_s
        self._max_pending = max_pending_messages or max_in_flight_batches * MAX_BATCH_ENTRIES * 4
        self.stats = SenderStats()
        self._cond = threading.Condition()
        self._queues: dict[str, deque[PackedMessage]] = {}
        self._ready: deque[str] = deque()  # groups with a message to send, none in flight
        self._waiting: dict[str, float] = {}  # group -> monotonic time its backoff ends
        self._attempts: dict[int, int] = {}  # id(message) -> failed attempts so far
        self._pending = 0  # enqueued, not yet acknowledged
        self._error: PermanentSendError | None = None
        self._closing = False
        self._on_ack: Ack | None = None
        self._threads: list[threading.Thread] = []
        self._last_warning = 0.0

    @classmethod
    def from_config(cls, config: AgentConfig, client: Any = None) -> SqsSender:
        sending = config.sending
        return cls(config.sqs.queue_url, client,
                   max_in_flight_batches=sending.max_in_flight_batches,
                   retry_mode=sending.retry_mode, max_attempts=sending.max_attempts,
                   max_backoff_s=sending.max_backoff_ms / 1000)

    # --- the pipeline's side ----------------------------------------------------------------

    def start(self, on_ack: Ack) -> None:
        self._on_ack = on_ack
        for i in range(self._workers_count):
            thread = threading.Thread(target=self._work, name=f"sqs-sender-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def error(self) -> PermanentSendError | None:
        return self._error

    @property
    def pending(self) -> int:
        return self._pending

    def has_capacity(self) -> bool:
        return self._pending < self._max_pending

    def waiting(self, group_id: str) -> bool:
        # A group keeps its queue until its last message is acknowledged (_settle). Read
        # without the lock: a dict lookup is atomic, and a stale answer only seals one
        # message a flusher tick early or late.
        return group_id in self._queues

    def wait_for_capacity(self, stop: threading.Event | None = None) -> None:
        if self._pending < self._max_pending and self._error is None:
            return  # the common case, without taking the lock
        with self._cond:
            while self._pending >= self._max_pending and self._error is None:
                if stop is not None and stop.is_set():
                    return
                self._cond.wait(timeout=0.2)
            if self._error is not None:
                raise self._error

    def enqueue(self, message: PackedMessage) -> None:
        """Queues a message behind the earlier ones of its group; never blocks."""
        with self._cond:
            if self._error is not None:
                raise self._error
            gid = message.wire.group_id
            queue = self._queues.get(gid)
            if queue is None:
                queue = self._queues[gid] = deque()
                self._ready.append(gid)  # a new group: nothing of it in flight
            queue.append(message)
            self._pending += 1
            self._cond.notify()

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until every queued message is acknowledged; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending and self._error is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(timeout=0.2 if left is None else min(left, 0.2))
            if self._error is not None:
                raise self._error
        return True

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    # --- the workers ----------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            try:
                acked, failed = self._send(batch)
            except PermanentSendError as exc:
                self._fail(exc)
                return
            except Exception as exc:  # a bug here must stop the agent, not strand messages
                log.exception("SQS sender stopped on an unexpected error")
                self._fail(PermanentSendError(f"unexpected sender error: {exc!r}"))
                return
            assert self._on_ack is not None
            for message in acked:
                # Before the pending count drops, so flush() returns only once the checkpoint
                # tracker has seen every acknowledgement.
                self._on_ack(message)
            self._settle(batch, acked, failed)

    def _take_batch(self) -> list[PackedMessage] | None:
        with self._cond:
            while True:
                if self._closing or self._error is not None:
                    return None
                self._release_waiting(time.monotonic())
                if self._ready:
                    break
                wake = min(self._waiting.values(), default=None)
                self._cond.wait(timeout=0.5 if wake is None
                                else max(0.001, wake - time.monotonic()))
            batch: list[PackedMessage] = []
            size, skipped = 0, []
            while self._ready and len(batch) < MAX_BATCH_ENTRIES:
                gid = self._ready.popleft()
                message = self._queues[gid][0]
                if batch and size + message.wire.size > SQS_MAX_MESSAGE_BYTES:
                    skipped.append(gid)  # the whole batch is capped at 1 MiB too
                    continue
                self._queues[gid].popleft()
                batch.append(message)
                size += message.wire.size
            self._ready.extendleft(reversed(skipped))
            return batch

    def _send(self, batch: list[PackedMessage]) -> tuple[list[PackedMessage],
                                                          list[tuple[PackedMessage, str]]]:
        entries = [{
            "Id": str(i),
            "MessageBody": m.wire.body,
            "MessageAttributes": m.wire.attributes,
            "MessageGroupId": m.wire.group_id,
            "MessageDeduplicationId": m.wire.dedup_id,
        } for i, m in enumerate(batch)]
        try:
            response = self._client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as exc:
            reason = self._classify_call_error(exc)
            self.stats.failed_calls += 1
            return [], [(m, reason) for m in batch]
        self.stats.batches += 1
        self.stats.billed_requests += -(-sum(m.wire.size for m in batch) // 65_536)
        acked = [batch[int(ok["Id"])] for ok in response.get("Successful", ())]
        failed: list[tuple[PackedMessage, str]] = []
        for entry in response.get("Failed", ()):
            message = batch[int(entry["Id"])]
            code = entry.get("Code", "?")
            if entry.get("SenderFault") and code not in TRANSIENT_CODES:
                raise PermanentSendError(
                    f"SQS refused a message of group {message.wire.group_id} "
                    f"(events {message.wire.first}..{message.wire.last}) on queue "
                    f"{self.queue_url}: {code}: {entry.get('Message', '')}")
            failed.append((message, code))
        answered = len(acked) + len(failed)
        if answered != len(batch):  # an entry SQS did not mention is not acknowledged
            seen = {id(m) for m in acked} | {id(m) for m, _ in failed}
            failed += [(m, "unanswered") for m in batch if id(m) not in seen]
        return acked, failed

    def _classify_call_error(self, exc: Exception) -> str:
        """The reason to retry a whole failed call; raises PermanentSendError if none can help."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            NoCredentialsError,
            NoRegionError,
            ParamValidationError,
        )

        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = error.get("Code", "?")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if code in TRANSIENT_CODES or status >= 500 or status == 0:
                return f"{code} (HTTP {status})"
            raise PermanentSendError(f"SQS refused SendMessageBatch on queue {self.queue_url}: "
                                     f"{code}: {error.get('Message', '')}") from exc
        if isinstance(exc, NoCredentialsError | NoRegionError | ParamValidationError):
            raise PermanentSendError(f"SQS queue {self.queue_url}: {exc} (credentials and "
                                     "region come from the standard AWS chain)") from exc
        if isinstance(exc, BotoCoreError | OSError):
            return type(exc).__name__  # connection errors and the like: worth another try
        raise exc

    def _settle(self, batch: list[PackedMessage], acked: list[PackedMessage],
                failed: list[tuple[PackedMessage, str]]) -> None:
        now = time.monotonic()
        with self._cond:
            for message in acked:
                self._attempts.pop(id(message), None)
                self.stats.messages += 1
                self.stats.events += message.wire.event_count
                self._pending -= 1
                gid = message.wire.group_id
                if self._queues[gid]:
                    self._ready.append(gid)
                else:
                    del self._queues[gid]
            for message, reason in failed:
                attempts = self._attempts.get(id(message), 0) + 1
                self._attempts[id(message)] = attempts
                self.stats.retried_entries += 1
                gid = message.wire.group_id
                self._queues[gid].appendleft(message)  # still the head of its group
                delay = random.uniform(0, min(self._max_backoff,
                                              _BASE_BACKOFF_S * 2 ** min(attempts, 20)))
                self._waiting[gid] = now + delay
                if now - self._last_warning >= 5.0:
                    self._last_warning = now
                    log.warning("SQS did not accept %d of %d message(s) (%s); retrying with "
                                "backoff, attempt %d", len(failed), len(batch), reason, attempts)
            self._cond.notify_all()

    def _release_waiting(self, now: float) -> None:
        for gid, until in list(self._waiting.items()):
            if until <= now:
                del self._waiting[gid]
                self._ready.append(gid)

    def _fail(self, error: PermanentSendError) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()
