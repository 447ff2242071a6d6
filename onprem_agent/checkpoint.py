"""The checkpoint: the highest txid T such that every event with txid <= T is acknowledged.

A restart resumes with the events of txid > T (the inotify "after txid" convention), so an event
is re-sent after a crash only if SQS might not have it; nothing past T is ever skipped.

`CheckpointTracker` computes T (pure, no I/O). The stores persist it: a local file, written
atomically, or an item in the agent-state DynamoDB table for agents that move between hosts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any, Protocol

from hdfs_events.names import STATE_ITEM_CHECKPOINT, STATE_PK, STATE_SK
from onprem_agent.atomic_file import replace_atomically
from onprem_agent.config import AgentConfig


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or written; the message names the store."""


class CheckpointTracker:
    """T from messages, not txids: what a message's acknowledgement means for the checkpoint.

    Every event the source hands out is packed into a message that is then open in the packer,
    in flight (sealed, not yet acknowledged) or acknowledged. A message opens with `after`, the
    newest txid the source had finished at that moment (`finished`: every event of it and of
    every lower txid packed), so each of its events has a higher txid. T is therefore the
    lowest `after` of the messages not yet acknowledged, or `finished` when there are none.
    The work is one dict entry per message (~1,600 events) where counting acknowledgements
    per txid cost ~0.6 us an event (docs/bench.md, "Pack + validate + gzip").

    - A txid whose events span two messages: both opened after the txid before it finished, so
      either one, unacknowledged, holds T below the txid, whatever order they complete in.
    - A snapshot's pieces (source.TxBatch `more`): its txid is finished only with its last
      piece, so every message holding a piece opens with `after` below it, and T cannot reach
      it before the last piece is packed and every message holding one is acknowledged.
    - A txid without events, or whose events were all filtered out: finished at once; T passes
      it as soon as no message opened before it is outstanding.
    """

    __slots__ = ("_in_flight", "finished")

    def __init__(self, start: int | None = None) -> None:
        # Written by the source's thread alone, in increasing order, after the txid's events
        # were packed (pipeline.py); None: nothing finished since the stream's start.
        self.finished = start
        self._in_flight: dict[str, int | None] = {}  # message id -> its `after`

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def sent(self, message_id: str, after: int | None) -> None:
        """A message sealed with `after` and handed to the sender (before it can be
        acknowledged)."""
        self._in_flight[message_id] = after

    def acknowledged(self, message_id: str) -> None:
        if self._in_flight.pop(message_id, _UNKNOWN) is _UNKNOWN:
            raise ValueError(f"acknowledgement of message {message_id}, which is not in flight")

    def safe_txid(self, open_afters: Iterable[int | None] = ()) -> int | None:
        """T, given the `after` of every message still open in the packer: every event with
        txid <= T is acknowledged (None: nothing yet, no start)."""
        safe = self.finished
        if safe is None:
            return None
        for after in chain(self._in_flight.values(), open_afters):
            if after is None:
                return None
            if after < safe:
                safe = after
        return safe


_UNKNOWN = object()


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
