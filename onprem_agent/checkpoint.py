"""The checkpoint: the highest txid T such that every event with txid <= T is acknowledged.

A restart resumes with the events of txid > T (the inotify "after txid" convention), so an event
is re-sent after a crash only if SQS might not have it; nothing past T is ever skipped.

`CheckpointTracker` computes T (pure, no I/O). The stores persist it: a local file, written
atomically, or an item in the agent-state DynamoDB table for agents that move between hosts.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from hdfs_events.names import STATE_ITEM_CHECKPOINT, STATE_PK, STATE_SK
from onprem_agent.atomic_file import replace_atomically
from onprem_agent.config import AgentConfig


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or written; the message names the store."""


class CheckpointTracker:
    """Tracks acknowledgements of events whose txid's events may span several messages that
    complete in any order.

    Txids are registered in increasing order with the number of their events that will be
    sent (0 for an op without events, or whose events were all filtered out). A message's
    acknowledgement names (txid, count) parts. T advances over a txid once all of its events,
    and all of every lower txid's, are acknowledged. A txid registered with `more` (a piece of
    a snapshot, source.TxBatch) stays open: the same txid is registered again with the next
    piece's count, and T cannot pass it before the piece without `more` is registered.
    """

    __slots__ = ("_last_registered", "_open", "_order", "_remaining", "_safe")

    def __init__(self, start: int | None = None) -> None:
        self._safe = start
        self._last_registered = start
        self._open: int | None = None  # the txid whose next piece is still to come
        self._remaining: dict[int, int] = {}
        self._order: deque[int] = deque()  # registered txids not yet passed, in order

    @property
    def safe_txid(self) -> int | None:
        """T: every event with txid <= T is acknowledged (None: nothing yet, no start)."""
        return self._safe

    @property
    def last_registered(self) -> int | None:
        return self._last_registered

    @property
    def pending_txids(self) -> int:
        return len(self._order)

    @property
    def open_txid(self) -> int | None:
        """The txid registered with `more` whose last piece is still to come."""
        return self._open

    def register(self, txid: int, events: int, *, more: bool = False) -> None:
        if txid == self._open:
            self._remaining[txid] += events
            if not more:
                self._open = None
                self._advance()
            return
        if self._open is not None:
            raise ValueError(f"txid {txid} registered while txid {self._open} awaits its "
                             "last piece")
        if self._last_registered is not None and txid <= self._last_registered:
            raise ValueError(f"txid {txid} registered after txid {self._last_registered}: "
                             "sources must hand out txids in increasing order")
        self._last_registered = txid
        if more:
            self._open = txid
        elif events == 0 and not self._order:
            self._safe = txid  # nothing outstanding below it: pass it at once
            return
        self._order.append(txid)
        self._remaining[txid] = events

    def acknowledge(self, parts: Iterable[tuple[int, int]]) -> None:
        """Records that SQS accepted `count` events of each (txid, count) part."""
        remaining = self._remaining
        for txid, count in parts:
            left = remaining.get(txid)
            if left is None or left < count:
                raise ValueError(f"acknowledgement of {count} event(s) of txid {txid}, "
                                 f"which has {left or 0} outstanding")
            remaining[txid] = left - count
        self._advance()

    def _advance(self) -> None:
        order, remaining = self._order, self._remaining
        while order and remaining[order[0]] == 0 and order[0] != self._open:
            txid = order.popleft()
            del remaining[txid]
            self._safe = txid


class CheckpointStore(Protocol):
    def load(self) -> int | None:
        """The saved txid, or None when nothing was saved yet."""
        ...

    def save(self, txid: int) -> None:
        """Persists `txid`; a txid lower than the saved one is ignored, never an error."""
        ...


class FileCheckpointStore:
    """A JSON file replaced atomically (onprem_agent.atomic_file): a crash at any point leaves
    the old or the new checkpoint, never a torn one."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._saved: int | None = None

    def load(self) -> int | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckpointError(f"checkpoint file {self.path}: {exc.strerror}") from exc
        try:
            txid = json.loads(text)["txid"]
        except (ValueError, KeyError, TypeError):
            txid = None
        if not isinstance(txid, int) or isinstance(txid, bool) or txid < 0:
            raise CheckpointError(f"checkpoint file {self.path} is not valid (expected "
                                  f'{{"txid": N}}); fix or remove it to replay from the start')
        self._saved = txid
        return txid

    def save(self, txid: int) -> None:
        if self._saved is not None and txid <= self._saved:
            return
        body = json.dumps({"txid": txid, "saved_at": _now_iso()}) + "\n"
        try:
            replace_atomically(self.path, body)
        except OSError as exc:
            raise CheckpointError(f"checkpoint file {self.path}: {exc.strerror}") from exc
        self._saved = txid


class DynamoCheckpointStore:
    """The checkpoint item of one cluster in the agent-state table, written with a condition
    so that the txid never moves backwards, even when two agents race."""

    def __init__(self, table_name: str, cluster: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self.table_name, self.cluster, self._client = table_name, cluster, client
        self._key = {STATE_PK: {"S": cluster}, STATE_SK: {"S": STATE_ITEM_CHECKPOINT}}

    def load(self) -> int | None:
        try:
            item = self._client.get_item(TableName=self.table_name, Key=self._key,
                                         ConsistentRead=True).get("Item")
        except self._client.exceptions.ClientError as exc:
            raise CheckpointError(self._describe(exc)) from exc
        if not item:
            return None
        try:
            return int(item["txid"]["N"])
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"DynamoDB table {self.table_name}: checkpoint item of "
                                  f"cluster {self.cluster} has no numeric txid") from exc

    def save(self, txid: int) -> None:
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression="SET txid = :t, saved_at = :now",
                ConditionExpression="attribute_not_exists(txid) OR txid < :t",
                ExpressionAttributeValues={":t": {"N": str(txid)}, ":now": {"S": _now_iso()}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return  # the stored txid is already >= txid: nothing to do
        except self._client.exceptions.ClientError as exc:
            raise CheckpointError(self._describe(exc)) from exc

    def _describe(self, exc: Any) -> str:
        code = exc.response.get("Error", {}).get("Code", "error")
        return (f"DynamoDB table {self.table_name}, checkpoint of cluster {self.cluster}: "
                f"{code}: {exc.response.get('Error', {}).get('Message', exc)}")


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def open_checkpoint_store(config: AgentConfig, *, dynamodb_client: Any = None) -> CheckpointStore:
    """The store the config chooses."""
    if config.checkpoint.store == "dynamodb":
        assert config.checkpoint.table is not None  # load_config requires it
        return DynamoCheckpointStore(config.checkpoint.table, config.cluster, dynamodb_client)
    assert config.checkpoint.path is not None
    return FileCheckpointStore(config.checkpoint.path)
