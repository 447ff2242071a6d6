"""Leader election for two (or more) agents on different edge nodes: one lease item per cluster
in the agent-state table, taken and renewed with conditional writes.

- Take: UpdateItem if there is no lease, it has expired by the taker's clock, or it is ours.
  Each takeover adds one to `epoch`, so logs show who led when.
- Renew: UpdateItem on condition that we still hold it. A failed condition means another agent
  took it after our lease ran out: stop shipping at once.
- Self-fencing: a leader that cannot renew (DynamoDB unreachable) stops leading when its own
  deadline passes, before any standby's clock can call the lease expired, as long as clocks
  agree to within `duration - renew_interval` (NTP keeps edge nodes far closer than that).
- Release on a clean shutdown, so the standby takes over at its next try instead of waiting.

Two leaders can overlap only if a leader is paused past its deadline (GC, suspended VM) and
wakes mid-write: the DynamoDB checkpoint still never moves backwards (conditional write), and a
re-sent event keeps its (cluster, txid, index) key, so the lake stays exactly-once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hdfs_events.names import STATE_ITEM_LEASE, STATE_PK, STATE_SK

log = logging.getLogger(__name__)


def new_holder_id() -> str:
    """host:pid:random: two agents on one host, or one restarted with the same pid, differ."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class LeaseError(RuntimeError):
    """DynamoDB refused or could not be reached; the message names the table and the cause."""


@dataclass(frozen=True, slots=True)
class LeaseState:
    holder: str | None
    expires_at: float | None  # epoch seconds, by the holder's clock
    epoch: int

    def is_live(self, now: float) -> bool:
        return self.holder is not None and self.expires_at is not None and now < self.expires_at


class Lease:
    def __init__(self, table: str, cluster: str, *, duration_s: float, holder_id: str | None = None,
                 client: Any = None, clock: Callable[[], float] = time.time) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self.table, self.cluster, self.duration_s = table, cluster, duration_s
        self.holder_id = holder_id or new_holder_id()
        self._client, self._clock = client, clock
        self._key = {STATE_PK: {"S": cluster}, STATE_SK: {"S": STATE_ITEM_LEASE}}
        self._deadline: float | None = None  # our own view: leading until then
        self.epoch = 0

    @property
    def held(self) -> bool:
        return self._deadline is not None and self._clock() < self._deadline

    def try_acquire(self) -> bool:
        now = self._clock()
        try:
            out = self._client.update_item(
                TableName=self.table, Key=self._key,
                UpdateExpression="SET holder = :me, expires_ms = :exp, acquired_ms = :now, "
                                 "epoch = if_not_exists(epoch, :zero) + :one",
                ConditionExpression="attribute_not_exists(holder) OR expires_ms < :now "
                                    "OR holder = :me",
                ExpressionAttributeValues=self._values(now, zero=True),
                ReturnValues="ALL_NEW")
        except self._client.exceptions.ConditionalCheckFailedException:
            self._deadline = None
            return False
        except self._client.exceptions.ClientError as exc:
            raise LeaseError(self._describe(exc)) from exc
        self.epoch = int(out["Attributes"]["epoch"]["N"])
        self._deadline = now + self.duration_s
        log.info("lease: %s leads cluster %s (epoch %d)", self.holder_id, self.cluster,
                 self.epoch)
        return True

    def renew(self) -> bool:
        now = self._clock()
        try:
            self._client.update_item(
                TableName=self.table, Key=self._key, UpdateExpression="SET expires_ms = :exp",
                ConditionExpression="holder = :me",
                ExpressionAttributeValues=self._values(now, zero=False))
        except self._client.exceptions.ConditionalCheckFailedException:
            log.error("lease: %s lost the lease of cluster %s to another agent",
                      self.holder_id, self.cluster)
            self._deadline = None
            return False
        except self._client.exceptions.ClientError as exc:
            raise LeaseError(self._describe(exc)) from exc
        self._deadline = now + self.duration_s
        return True

    def release(self) -> None:
        self._deadline = None
        try:
            # Kept, not deleted: the epoch counts on across leaders.
            self._client.update_item(
                TableName=self.table, Key=self._key,
                UpdateExpression="REMOVE holder SET expires_ms = :zero",
                ConditionExpression="holder = :me",
                ExpressionAttributeValues={":me": {"S": self.holder_id}, ":zero": {"N": "0"}})
        except self._client.exceptions.ConditionalCheckFailedException:
            return  # someone else holds it already
        except self._client.exceptions.ClientError as exc:
            raise LeaseError(self._describe(exc)) from exc

    def read(self) -> LeaseState:
        try:
            item = self._client.get_item(TableName=self.table, Key=self._key,
                                         ConsistentRead=True).get("Item")
        except self._client.exceptions.ClientError as exc:
            raise LeaseError(self._describe(exc)) from exc
        if not item:
            return LeaseState(None, None, 0)
        holder = item.get("holder", {}).get("S")
        return LeaseState(holder, int(item["expires_ms"]["N"]) / 1000 if holder else None,
                          int(item.get("epoch", {"N": "0"})["N"]))

    def _values(self, now: float, *, zero: bool) -> dict[str, dict[str, str]]:
        values = {":me": {"S": self.holder_id},
                  ":exp": {"N": str(int((now + self.duration_s) * 1000))}}
        if zero:
            values |= {":now": {"N": str(int(now * 1000))}, ":zero": {"N": "0"},
                       ":one": {"N": "1"}}
        return values

    def _describe(self, exc: Any) -> str:
        error = exc.response.get("Error", {})
        return (f"DynamoDB table {self.table}, lease of cluster {self.cluster}: "
                f"{error.get('Code', 'error')}: {error.get('Message', exc)}")


class LeaseKeeper:
    """Renews the lease every `interval_s` in a thread; on loss (or when the deadline passes
    without a renewal) sets `lost`, which the run loop turns into a stop."""

    def __init__(self, lease: Lease, *, interval_s: float,
                 wait: Callable[[threading.Event, float], bool] | None = None) -> None:
        self.lease, self.interval_s = lease, interval_s
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._wait = wait or (lambda event, seconds: event.wait(seconds))
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._wait(self._stop, self.interval_s):
            try:
                if not self.lease.renew():
                    self.lost.set()
                    return
            except LeaseError as exc:
                log.warning("lease: renewal failed (%s); retrying", exc)
                if not self.lease.held:  # self-fence: our deadline passed without a renewal
                    log.error("lease: deadline passed without a renewal; stepping down")
                    self.lost.set()
                    return


def wait_until_leader(lease: Lease, stop: threading.Event, *, interval_s: float,
                      wait: Callable[[threading.Event, float], bool] | None = None) -> bool:
    """The standby's loop: try every `interval_s` until leading (True) or stopped (False).
    A leader that died without releasing is replaced within duration + interval."""
    wait = wait or (lambda event, seconds: event.wait(seconds))
    while not stop.is_set():
        try:
            if lease.try_acquire():
                return True
        except LeaseError as exc:
            log.warning("lease: %s; retrying", exc)
        if wait(stop, interval_s):
            return False
    return False
