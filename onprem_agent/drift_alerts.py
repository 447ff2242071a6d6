"""`verify`'s drift alerts: one SQS message per drifting path to the drift alert queue
([verify] drift_queue_url; the message is hdfs_events.drift_alert's), at most
[verify] alert_max_paths per run, then one summary saying how many more drift.

The cap is per run, across prefixes: an index lost or pointed at the wrong table makes every
path drift, and millions of messages would help no one read them (one summary does).

Retries: botocore's retry mode retries whole calls (throttling, 5xx, connection errors); an
entry a SendMessageBatch response lists as failed is sent again with backoff, unless SQS says
no retry can help (a sender fault that is not throttling), which stops with DriftAlertSendError,
as does an entry still failing after `max_rounds` sends.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hdfs_events.drift_alert import DriftSummary, VerifyRun, path_drift
from onprem_agent.sender import MAX_BATCH_ENTRIES, TRANSIENT_CODES
from onprem_agent.verify import Drift

log = logging.getLogger(__name__)

_BASE_BACKOFF_S = 0.1


class DriftAlertSendError(RuntimeError):
    """Drift alerts SQS did not accept; the message names the queue and the code."""


def new_run(cluster: str, clock: Callable[[], float] = time.time) -> VerifyRun:
    stamp = datetime.fromtimestamp(clock(), UTC)
    return VerifyRun(cluster, run_id=uuid.uuid4().hex,
                     run_time=stamp.isoformat(timespec="seconds").replace("+00:00", "Z"))


def sqs_client(retry_mode: str, max_attempts: int) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("sqs", config=Config(retries={"mode": retry_mode,
                                                      "max_attempts": max_attempts}))


class DriftAlertSender:
    """Collects a run's path alerts, sends them ten at a time, and a summary past the cap."""

    def __init__(self, queue_url: str, run: VerifyRun, client: Any, *, max_paths: int,
                 max_rounds: int = 5, sleep: Callable[[float], None] = time.sleep) -> None:
        self.queue_url, self.run, self._client = queue_url, run, client
        self.max_paths, self._max_rounds, self._sleep = max_paths, max_rounds, sleep
        self._pending: list[str] = []
        self.sent = 0  # path alerts SQS accepted
        self.found = 0  # drifting paths seen, sent or not
        # The first send that failed for good: later alerts are only counted, and close()
        # raises it, so verify still finishes its comparison and publishes IndexDrift.
        self._error: DriftAlertSendError | None = None

    def on_drift(self, prefix: str) -> Callable[[Drift], None]:
        """verify_prefix's `on_drift` for `prefix`: every drift as the walk finds it (a report
        keeps only the first ones), queued while under the cap and sent ten at a time."""
        def take(drift: Drift) -> None:
            self.found += 1
            if self.sent + len(self._pending) >= self.max_paths:
                return
            alert = path_drift(self.run, prefix, kind=drift.kind, path=drift.path,
                               hdfs=drift.hdfs, index=drift.index, index_txid=drift.index_txid)
            self._pending.append(alert.body())
            if len(self._pending) == MAX_BATCH_ENTRIES:
                self._flush_or_keep_error()

        return take

    def close(self) -> DriftSummary | None:
        """Sends what is pending and, past the cap, the summary (returned)."""
        self._flush_or_keep_error()
        if self._error is not None:
            raise self._error
        more = self.found - self.sent
        if more <= 0:
            return None
        summary = DriftSummary(self.run.cluster, self.run.run_id, self.run.run_time,
                               sent=self.sent, more=more)
        self._pending.append(summary.body())
        self._flush(counted=False)
        return summary

    def _flush_or_keep_error(self) -> None:
        if self._error is not None:
            self._pending.clear()
            return
        try:
            self._flush()
        except DriftAlertSendError as exc:
            self._error = exc

    def _flush(self, *, counted: bool = True) -> None:
        bodies, self._pending = self._pending, []
        todo = dict(enumerate(bodies))
        for attempt in range(self._max_rounds):
            if not todo:
                break
            if attempt:
                self._sleep(min(5.0, _BASE_BACKOFF_S * 2 ** attempt) * random.uniform(0.5, 1))
            todo = self._send({i: todo[i] for i in todo})
        if todo:
            raise DriftAlertSendError(
                f"{len(todo)} drift alerts of run {self.run.run_id} not accepted by "
                f"{self.queue_url} after {self._max_rounds} sends")
        if counted:
            self.sent += len(bodies)

    def _send(self, bodies: dict[int, str]) -> dict[int, str]:
        """One SendMessageBatch; returns the entries to send again."""
        from botocore.exceptions import BotoCoreError, ClientError

        entries = [{"Id": str(i), "MessageBody": body} for i, body in bodies.items()]
        try:
            response = self._client.send_message_batch(QueueUrl=self.queue_url,
                                                       Entries=entries)
        except (BotoCoreError, ClientError) as exc:
            # botocore's retry mode has already retried what a retry could fix.
            raise DriftAlertSendError(f"SendMessageBatch to {self.queue_url}: {exc}") from exc
        again: dict[int, str] = {}
        for entry in response.get("Failed", ()):
            code = entry.get("Code", "?")
            if entry.get("SenderFault") and code not in TRANSIENT_CODES:
                raise DriftAlertSendError(f"{self.queue_url} refused a drift alert: {code}: "
                                          f"{entry.get('Message', '')}")
            log.warning("drift alert not accepted (%s), sending it again", code)
            again[int(entry["Id"])] = bodies[int(entry["Id"])]
        answered = {int(e["Id"]) for e in response.get("Successful", ())} | again.keys()
        # An entry SQS did not mention is not acknowledged either.
        again.update({i: b for i, b in bodies.items() if i not in answered})
        return again
