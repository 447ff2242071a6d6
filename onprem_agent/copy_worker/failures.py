"""The two ways a copy request ends badly, and why the difference matters.

`Rejected` can never succeed (bad input, not allowed here, a manifest that lies): retrying would
only loop, so the worker records it, notifies, and deletes the message. `CopyFailed` may succeed
later (distcp failed, a timeout, the _SUCCESS marker not there yet): the message is left to
reappear after a growing backoff, until max_attempts sends it to the dead-letter queue.
"""

from __future__ import annotations


class Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CopyFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
