"""The copy worker: long-polls the copy-request queue and carries each request to its end.

Per message: decode and validate (contract, then allow-lists) -> begin in the transfers table
(a redelivery of a finished request stops here and is deleted) -> list the source, plan ->
distcp, with the visibility heartbeat running -> list the destination and verify -> record
verified -> delete the message -> publish the outcome.

A request that can never succeed is recorded as `rejected` with its reason, notified, and
deleted at once. It is not left for the dead-letter queue: redrive only happens after
maxReceiveCount receipts (each one a wasted visibility timeout), and the DLQ would hold the body
without the reason. The transfers item holds both, and `hdfs-events copy status` shows them.
A copy that fails is left on the queue to reappear after a backoff that doubles per receipt;
after max_attempts receipts it is recorded `failed` (final) and the queue's redrive policy moves
it to the DLQ. Should the queue have no such policy, the worker deletes it at the next receipt
after recording, so no request loops forever.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hdfs_events.copy_request import (
    REQUEST_ID,
    CopyMode,
    CopyRequest,
    CopyRequestError,
    TransferState,
    decode_request,
)
from onprem_agent.copy_worker.allowlist import check_allowed, notify_topics
from onprem_agent.copy_worker.distcp import distcp_argv
from onprem_agent.copy_worker.failures import CopyFailed, Rejected
from onprem_agent.copy_worker.heartbeat import VisibilityHeartbeat
from onprem_agent.copy_worker.listing import DestinationLister, distcp_temporaries, list_s3
from onprem_agent.copy_worker.outcome import Outcome, OutcomePublisher
from onprem_agent.copy_worker.plan import describe_problems, filter_lines, make_plan, verify
from onprem_agent.copy_worker.settings import SQS_MAX_VISIBILITY_S, CopySettings
from onprem_agent.copy_worker.transfers import AlreadyFinished, StaleAttempt, TransfersTable

log = logging.getLogger(__name__)

SQS_MAX_RECEIVE = 10  # ReceiveMessage returns at most 10 messages
_RECEIVE_ERROR_PAUSE_S = 5
_BODY_PREVIEW_CHARS = 300

DistcpRun = Callable[[Sequence[str]], str]


def retry_delay(receive_count: int, base_s: int, max_s: int) -> int:
    """Seconds before a failed request reappears: base, 2x base, 4x base ... up to max_s."""
    exponent = min(max(receive_count - 1, 0), 30)
    return int(min(base_s * 2**exponent, max_s, SQS_MAX_VISIBILITY_S))


class CopyWorker:
    def __init__(self, settings: CopySettings, *, sqs: Any, s3: Any,
                 transfers: TransfersTable, publisher: OutcomePublisher,
                 lister: DestinationLister, run_distcp: DistcpRun,
                 monotonic: Callable[[], float] = time.monotonic,
                 worker_id: str | None = None) -> None:
        self._settings = settings
        self._sqs = sqs
        self._s3 = s3
        self._transfers = transfers
        self._publisher = publisher
        self._lister = lister
        self._run_distcp = run_distcp
        self._monotonic = monotonic
        self._worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"

    # --- the loop --------------------------------------------------------------------------

    def run(self, stop: threading.Event, *, exit_when_idle: bool = False) -> int:
        """Polls until `stop` is set (or, with exit_when_idle, until a poll finds nothing and
        no copy is running). Copies in flight are finished before returning. Returns the number
        of messages handled."""
        limit = self._settings.max_concurrent
        slots = threading.Semaphore(limit)
        lock = threading.Lock()
        state = {"in_flight": 0, "handled": 0}

        def done(_: object) -> None:
            with lock:
                state["in_flight"] -= 1
                state["handled"] += 1
            slots.release()

        with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="copy") as pool:
            while not stop.is_set():
                if not slots.acquire(timeout=0.5):
                    continue
                free = 1
                while free < min(limit, SQS_MAX_RECEIVE) and slots.acquire(blocking=False):
                    free += 1
                try:
                    messages = self._receive(free)
                except (ClientError, BotoCoreError) as exc:
                    log.error("copy-request queue: receive failed: %s", exc)
                    messages = []
                    stop.wait(_RECEIVE_ERROR_PAUSE_S)
                for _ in range(free - len(messages)):
                    slots.release()
                with lock:
                    state["in_flight"] += len(messages)
                    idle = not messages and state["in_flight"] == 0
                for message in messages:
                    pool.submit(self._handle_logged, message).add_done_callback(done)
                if idle and exit_when_idle:
                    break
        return state["handled"]

    def _receive(self, count: int) -> list[dict[str, Any]]:
        response = self._sqs.receive_message(
            QueueUrl=self._settings.queue_url, MaxNumberOfMessages=count,
            WaitTimeSeconds=self._settings.poll_wait_s,
            VisibilityTimeout=self._settings.visibility_timeout_s,
            MessageSystemAttributeNames=["ApproximateReceiveCount"])
        return list(response.get("Messages", ()))

    def _handle_logged(self, message: dict[str, Any]) -> str:
        try:
            return self.handle(message)
        except Exception:
            # The message stays on the queue and reappears after its visibility timeout.
            log.exception("copy message %s: unexpected error", message.get("MessageId"))
            raise

    # --- one request -----------------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> str:
        """Carries one message as far as it can go; returns what happened (for logs, tests)."""
        body = message.get("Body", "")
        receive_count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
        try:
            request = decode_request(body)
        except CopyRequestError as exc:
            return self._reject(None, f"invalid request: {exc}", message, attempt=None)
        try:
            check_allowed(request, self._settings)
        except Rejected as exc:
            return self._reject(request, exc.reason, message, attempt=None)
        if receive_count > self._settings.max_attempts and self._failed_for_good(request):
            # A queue whose redrive maxReceiveCount is above max_attempts hands the final
            # failure's message back: the failure recorded stands, with its reason.
            log.warning("copy %s: received %d times after its final failure; message deleted, "
                        "the failure recorded stands", request.request_id, receive_count)
            self._delete(message)
            return "duplicate:failed"
        try:
            attempt = self._transfers.begin(request, worker=self._worker_id,
                                            message_id=message["MessageId"])
        except AlreadyFinished as exc:
            log.info("copy %s: already %s; redelivered message deleted without copying",
                     request.request_id, exc.state)
            self._delete(message)
            return f"duplicate:{exc.state}"
        except Rejected as exc:
            return self._reject(request, exc.reason, message, attempt=None)
        if receive_count > self._settings.max_attempts:
            return self._fail(request, attempt, message, receive_count, duration_ms=0,
                              reason=f"received {receive_count} times, more than max_attempts "
                                     f"({self._settings.max_attempts}); is the queue's redrive "
                                     "policy missing?", give_up=True)
        started = self._monotonic()
        log.info("copy %s: attempt %d (receipt %d): %s -> %s (%s)", request.request_id,
                 attempt, receive_count, request.source.uri, request.destination, request.mode)
        try:
            with VisibilityHeartbeat(self._sqs, self._settings.queue_url,
                                     message["ReceiptHandle"],
                                     visibility_timeout_s=self._settings.visibility_timeout_s,
                                     every_s=self._settings.heartbeat_s,
                                     label=request.request_id):
                copied_bytes, files = self._copy_and_verify(request, attempt)
        except Rejected as exc:
            return self._reject(request, exc.reason, message, attempt=attempt)
        except CopyFailed as exc:
            return self._fail(request, attempt, message, receive_count, reason=exc.reason,
                              duration_ms=self._elapsed_ms(started))
        duration_ms = self._elapsed_ms(started)
        try:
            self._transfers.verified(request.request_id, attempt, bytes_copied=copied_bytes,
                                     files=files, duration_ms=duration_ms)
        except StaleAttempt as exc:
            log.warning("copy %s: %s; leaving the message to the newer attempt",
                        request.request_id, exc)
            return "stale"
        self._delete(message)
        self._publisher.publish(Outcome(
            request_id=request.request_id, state=TransferState.VERIFIED.value,
            source=request.source.uri, destination=request.destination, attempts=attempt,
            bytes=copied_bytes, files=files, duration_ms=duration_ms), self._topics(request))
        return TransferState.VERIFIED.value

    def _copy_and_verify(self, request: CopyRequest, attempt: int) -> tuple[int, int]:
        settings = self._settings
        source_objects = list_s3(self._s3, request.source, settings.max_objects)
        existing = (self._lister.list(request.destination)
                    if request.mode is CopyMode.SKIP_EXISTING else None)
        plan = make_plan(request, source_objects, existing, max_bytes=settings.max_bytes)
        if plan.to_copy:
            with tempfile.TemporaryDirectory(prefix="hdfs-events-copy-") as tmp:
                filters = None
                if plan.excluded_keys:
                    filters = Path(tmp) / "filters.txt"
                    lines = filter_lines(request.source.bucket, plan.excluded_keys)
                    filters.write_text("\n".join(lines) + "\n", encoding="utf-8")
                argv = distcp_argv(settings.distcp_command, request.mode,
                                   request.source.s3a_uri, request.destination, filters)
                log.info("copy %s: running %s (%d files, %d bytes, %d excluded)",
                         request.request_id, argv, len(plan.to_copy), plan.bytes_to_copy,
                         len(plan.excluded_keys))
                self._run_distcp(argv)
        landed = self._lister.list(request.destination)
        problems = verify(plan, landed)
        if problems:
            raise CopyFailed(f"verification: {describe_problems(problems)}")
        # An earlier attempt of this request that was killed mid-copy left DistCp temporaries
        # (partial files under .distcp.tmp.* names); this attempt has copied every file whole,
        # so they are removed before the copy counts as done. Only from attempt 2 on: a first
        # attempt has none to clean (DistCp deletes its temporaries when a copy fails), and a
        # copy of another request running into the same directory keeps its own.
        leftovers = distcp_temporaries(landed) if attempt > 1 else []
        if leftovers:
            log.info("copy %s: removing %d DistCp temporaries left by a killed attempt",
                     request.request_id, len(leftovers))
            self._lister.remove(request.destination, leftovers)
        return plan.bytes_to_copy, len(plan.to_copy)

    # --- endings ---------------------------------------------------------------------------

    def _reject(self, request: CopyRequest | None, reason: str, message: dict[str, Any], *,
                attempt: int | None) -> str:
        message_key = f"message:{message['MessageId']}"
        body = message.get("Body", "")
        preview = repr(body[:_BODY_PREVIEW_CHARS])
        key = request.request_id if request is not None else (_claimed_id(body) or message_key)
        recorded = self._transfers.rejected(
            key, reason=reason, request=request, attempt=attempt,
            body_preview=None if request is not None else preview)
        if not recorded and key != message_key:
            key = message_key
            recorded = self._transfers.rejected(key, reason=reason, request=None,
                                                attempt=None, body_preview=preview)
        log.warning("copy %s: rejected: %s%s", key, reason,
                    "" if recorded else " (already recorded)")
        self._delete(message)
        self._publisher.publish(Outcome(
            request_id=key, state=TransferState.REJECTED.value, reason=reason,
            source=request.source.uri if request else None,
            destination=request.destination if request else None), self._topics(request))
        return TransferState.REJECTED.value

    def _fail(self, request: CopyRequest, attempt: int, message: dict[str, Any],
              receive_count: int, *, reason: str, duration_ms: int,
              give_up: bool = False) -> str:
        settings = self._settings
        final = give_up or receive_count >= settings.max_attempts
        delay = retry_delay(receive_count, settings.retry_base_s, settings.retry_max_s)
        try:
            self._transfers.failed(request.request_id, attempt, reason=reason, final=final,
                                   retry_in_s=None if final else delay,
                                   duration_ms=duration_ms)
        except StaleAttempt as exc:
            log.warning("copy %s: %s", request.request_id, exc)
            return "stale"
        if give_up:
            self._delete(message)
        elif final:
            # Visible again at once: the next receipt exceeds maxReceiveCount and SQS moves the
            # message to the dead-letter queue.
            self._set_visibility(message, 0)
        else:
            self._set_visibility(message, delay)
        log.warning("copy %s: attempt %d failed%s: %s", request.request_id, attempt,
                    " (final)" if final else f"; retry in {delay} s", reason)
        if final:
            self._publisher.publish(Outcome(
                request_id=request.request_id, state=TransferState.FAILED.value,
                reason=reason, source=request.source.uri, destination=request.destination,
                attempts=attempt, duration_ms=duration_ms), self._topics(request))
        return "failed:final" if final else "failed:retry"

    def _failed_for_good(self, request: CopyRequest) -> bool:
        item = self._transfers.get(request.request_id) or {}
        return (item.get("fingerprint") == request.fingerprint and bool(item.get("final"))
                and item.get("state") == TransferState.FAILED.value)

    def _topics(self, request: CopyRequest | None) -> list[str]:
        topics = [self._settings.notify_topic_arn] if self._settings.notify_topic_arn else []
        if (request is not None and request.notify is not None
                and request.notify in notify_topics(self._settings)):
            topics.append(request.notify)
        return topics

    def _delete(self, message: dict[str, Any]) -> None:
        self._sqs.delete_message(QueueUrl=self._settings.queue_url,
                                 ReceiptHandle=message["ReceiptHandle"])

    def _set_visibility(self, message: dict[str, Any], seconds: int) -> None:
        try:
            self._sqs.change_message_visibility(QueueUrl=self._settings.queue_url,
                                                ReceiptHandle=message["ReceiptHandle"],
                                                VisibilityTimeout=seconds)
        except (ClientError, BotoCoreError) as exc:
            # The message then reappears after the visibility timeout it was received with.
            log.warning("copy message %s: could not set visibility to %d s: %s",
                        message.get("MessageId"), seconds, exc)

    def _elapsed_ms(self, started: float) -> int:
        return int((self._monotonic() - started) * 1000)


def _claimed_id(body: str) -> str | None:
    """The request_id an invalid request claims, if it is a valid id: the rejection is then
    recorded where `hdfs-events copy status ID` looks (never over an existing item)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    claimed = doc.get("request_id") if isinstance(doc, dict) else None
    return claimed if isinstance(claimed, str) and REQUEST_ID.fullmatch(claimed) else None
