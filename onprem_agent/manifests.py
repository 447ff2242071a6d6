"""Which manifests are due: the txid ranges the agent closes, and the messages each one names.

Pure (no I/O, no clock): the pipeline tells it what SQS acknowledged and asks, at each
checkpoint interval, which manifests are due (hdfs_events/manifest.py says what a manifest is
and why the consumer needs it).

A range (`after`, `end`] closes at the tracker's safe txid: every event with txid <= `end` is
acknowledged, so every message holding one of them is known. The range names each of those
messages having an event in it; a message with events on both sides of `end` is named again by
the next range (it holds events of both). One range is outstanding at a time: the next is cut
only after SQS acknowledged every part of the previous one, so `acknowledged_end`, the
checkpoint, is always a range boundary and the ranges of one run form a single chain.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from hdfs_events.envelope import WireMessage
from hdfs_events.manifest import Manifest, manifests_for
from onprem_agent.packer import PackedMessage


@dataclass(frozen=True, slots=True)
class _Acknowledged:
    dedup_id: str
    first_txid: int
    last_txid: int
    txids: tuple[int, ...] | None  # every txid it holds events of, ascending; None: unknown

    def has_event_in(self, after: int | None, end: int) -> bool:
        if self.first_txid > end or (after is not None and self.last_txid <= after):
            return False
        if self.txids is None or after is None:
            return True  # first..last overlaps the range; without txids assume it has one
        # The first txid above `after` (one exists: last_txid > after) must be <= end.
        return self.txids[bisect_right(self.txids, after)] <= end


class ManifestBuilder:
    """The chain of one agent run's ranges, starting after `after` (the checkpoint it resumed
    from; None: from the start of the stream)."""

    __slots__ = ("_acknowledged", "_acknowledged_end", "_after", "_cluster", "_outstanding",
                 "_outstanding_parts")

    def __init__(self, cluster: str, after: int | None = None) -> None:
        self._cluster = cluster
        self._after = after  # the end of the last range cut (its manifests due or sent)
        self._acknowledged_end = after
        self._acknowledged: list[_Acknowledged] = []
        # (after, end, range id) of the range whose manifests await acknowledgement
        self._outstanding: tuple[int | None, int, str] | None = None
        self._outstanding_parts: set[int] = set()

    @property
    def acknowledged_end(self) -> int | None:
        """The end of the last range all of whose manifest parts SQS acknowledged: every event
        up to it is acknowledged and named. Starts at the constructor's `after` (the previous
        run's acknowledged end); None before any range when it started from nothing."""
        return self._acknowledged_end

    @property
    def outstanding(self) -> bool:
        """Whether a range's manifests were handed out and not all of them acknowledged."""
        return self._outstanding is not None

    @property
    def held_messages(self) -> int:
        """Acknowledged messages with events past the last range cut (kept to be named)."""
        return len(self._acknowledged)

    def acknowledged(self, dedup_id: str, first_txid: int, last_txid: int, *,
                     txids: Sequence[int] | None = None) -> None:
        """An event message SQS acknowledged, holding events of txids first..last (`txids`,
        ascending, when known: then a range between two of them does not name it)."""
        if last_txid < first_txid:
            raise ValueError(f"message {dedup_id}: last txid {last_txid} < first {first_txid}")
        if self._after is not None and last_txid <= self._after:
            return  # every txid of it is in ranges already cut (a source repeating itself)
        self._acknowledged.append(_Acknowledged(
            dedup_id, first_txid, last_txid, None if txids is None else tuple(txids)))

    def due(self, safe_txid: int | None) -> list[Manifest]:
        """The manifests of the range (previous end, `safe_txid`], if one is due: `safe_txid`
        is past the previous end and no range is awaiting its acknowledgement. Call with the
        checkpoint tracker's safe txid: every event with txid <= it is acknowledged."""
        if safe_txid is None or self._outstanding is not None:
            return []
        after = self._after
        if after is not None and safe_txid <= after:
            return []
        named, kept = [], []
        for message in self._acknowledged:
            if message.has_event_in(after, safe_txid):
                named.append(message.dedup_id)
            if message.last_txid > safe_txid:
                kept.append(message)  # straddles the end: the next range names it again
        self._acknowledged = kept
        manifests = manifests_for(self._cluster, after, safe_txid, named)
        self._after = safe_txid
        self._outstanding = (after, safe_txid, manifests[0].range_id)
        self._outstanding_parts = {m.part for m in manifests}
        return manifests

    def manifest_acknowledged(self, manifest: Manifest) -> None:
        """SQS acknowledged one part of the outstanding range's manifest."""
        if (self._outstanding != (manifest.after, manifest.end, manifest.range_id)
                or manifest.part not in self._outstanding_parts):
            raise ValueError(f"acknowledgement of manifest ({manifest.after}, {manifest.end}] "
                             f"part {manifest.part}, which is not outstanding")
        self._outstanding_parts.discard(manifest.part)
        if not self._outstanding_parts:
            self._acknowledged_end = manifest.end
            self._outstanding = None


def manifest_message(manifest: Manifest) -> PackedMessage:
    """The manifest as a message for the sender. No txids: its acknowledgement moves the
    manifest chain (`PackedMessage.manifest`), not the checkpoint tracker."""
    wire = WireMessage(body=manifest.to_json(), attributes=manifest.message_attributes(),
                       group_id=manifest.group_id, dedup_id=manifest.dedup_id, event_count=0,
                       first=(manifest.end, 0), last=(manifest.end, 0))
    return PackedMessage(wire=wire, manifest=manifest)
