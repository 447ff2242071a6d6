"""Keeps a message invisible while its copy runs.

The classic consumer set a 1-second visibility timeout around a copy that took minutes, so the
message reappeared and was copied again by the next poll. Here the message is received with
visibility_timeout_s and renewed every heartbeat_s (at most a third of it) for as long as the
copy runs; if the worker dies the renewals stop and the message reappears within one timeout.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

log = logging.getLogger(__name__)


class VisibilityHeartbeat:
    def __init__(self, sqs: Any, queue_url: str, receipt_handle: str, *,
                 visibility_timeout_s: int, every_s: float, label: str) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._receipt_handle = receipt_handle
        self._visibility_timeout_s = visibility_timeout_s
        self._every_s = every_s
        self._label = label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{label}",
                                        daemon=True)
        self.renewals = 0
        self.failures = 0

    def __enter__(self) -> VisibilityHeartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                self._sqs.change_message_visibility(
                    QueueUrl=self._queue_url, ReceiptHandle=self._receipt_handle,
                    VisibilityTimeout=self._visibility_timeout_s)
                self.renewals += 1
            except (ClientError, BotoCoreError) as exc:
                # Keep trying: a network blip must not end the copy. If the message was lost
                # (receipt handle expired), another worker may start the same request; the
                # transfers table's attempt counter makes the stale worker's result lose.
                self.failures += 1
                log.warning("copy %s: visibility heartbeat failed: %s", self._label, exc)
