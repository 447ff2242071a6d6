"""The consumer sequencer's items in the index table, beside the entries: their keys and
attributes, for the consumer that writes them (lambdas/ingest/sequence_store.py), `hdfs-events
index status` that reads them (hdfs_events_cli/index_status.py) and the inventory job that puts
the position after writing a first start's index from an fsimage (glue_jobs/image_index.py).
Wire format (DynamoDB's typed JSON); no I/O here.

Keys never meet an entry's: an entry's partition is "<cluster>#<parent dir>" and a parent
directory starts with "/", these start with "<cluster>!" (names.*_partition).

- "<cluster>!manifests" / "<end>.<after>.<range id>.<part>": one item per manifest part; ends
  zero-padded so a Query reads ranges in txid order from a position onwards.
- "<cluster>!arrived#<dedup id>" / "-": one item per message (its own partition: arrivals come
  at the message rate, and one partition takes at most 1,000 writes/s).
- "<cluster>!lost-manifests" / "<received ms>.<message id>": manifests of the cluster's own
  principal that were quarantined (so the range they closed is passed, not waited for).
- "<cluster>!position" / "-": the position (txid, idx, and `walk`: an unfinished subtree walk
  as its JSON) and its lease.
"""

from __future__ import annotations

from typing import Any

from hdfs_events import names
from hdfs_events.manifest import Manifest, decode_manifest

Key = dict[str, dict[str, str]]

# The position: applied through `txid`, and of it up to event `idx` (TXID_DONE: all of it);
# `walk` an unfinished subtree walk (lambdas/ingest/subtree.py SubtreeOp JSON); the lease.
POSITION_TXID, POSITION_INDEX, POSITION_WALK = "txid", "idx", "walk"
LEASE_OWNER, LEASE_UNTIL_MS = "lease_owner", "lease_until_ms"
# Who took the lease last: kept after its release, so a holder taking it again knows whether
# anyone held it in between (what it held of the table is then still the table's).
LEASE_TAKEN_BY = "lease_taken_by"
TXID_DONE = names.POSITION_TXID_DONE
# A manifest part's item: the manifest's JSON and when it first arrived.
MANIFEST, RECEIVED_MS = "manifest", "received_ms"
# An arrival: the lake objects its message's events went to, or why it was quarantined.
LAKE_KEYS, QUARANTINED = "lake_keys", "quarantined"
# A lost manifest's reason.
REASON = "reason"


def _key(partition: str, sort: str = names.SEQUENCER_SK) -> Key:
    return {names.INDEX_PK: {"S": partition}, names.INDEX_SK: {"S": sort}}


def position_key(cluster: str) -> Key:
    return _key(names.position_partition(cluster))


def applied_through(cluster: str, txid: int) -> Key:
    """The position item (wire format) of an index that holds every change up to and including
    `txid` and nothing after it: the sequencer goes on with the range that continues at txid+1."""
    return {**position_key(cluster), POSITION_TXID: {"N": str(txid)},
            POSITION_INDEX: {"N": str(TXID_DONE)}}


def manifest_key(manifest: Manifest) -> Key:
    after = "-" if manifest.after is None else str(manifest.after)
    return _key(names.manifests_partition(manifest.cluster),
                f"{manifest.end:020d}.{after}.{manifest.range_id}.{manifest.part:05d}")


def manifests_ending_from(txid: int) -> dict[str, str]:
    """The least sort key of a manifest part whose range ends at `txid` or later."""
    return {"S": f"{txid:020d}"}


def stored_manifest(item: dict[str, Any]) -> tuple[Manifest, int]:
    """(the manifest, when it first arrived in ms) of a manifest part's item; ManifestError if
    its JSON is not a manifest (never stored by the consumer, which decodes before storing)."""
    return decode_manifest(item[MANIFEST]["S"]), int(item[RECEIVED_MS]["N"])


def lost_manifest_key(cluster: str, received_ms: int, message_id: str) -> Key:
    return _key(names.lost_manifests_partition(cluster), f"{received_ms:015d}.{message_id}")


def lost_manifests_between(received_from_ms: int, received_to_ms: int
                           ) -> tuple[dict[str, str], dict[str, str]]:
    """Sort-key bounds (BETWEEN) of the lost manifests received in these milliseconds, both
    included: "/" sorts after ".", so the upper bound takes every id of its millisecond."""
    return {"S": f"{received_from_ms:015d}"}, {"S": f"{received_to_ms:015d}/"}


def lost_manifest_of(item: dict[str, Any]) -> tuple[int, str, str]:
    """(received ms, message id, reason) of a lost manifest's item."""
    received, _, message_id = item[names.INDEX_SK]["S"].partition(".")
    return int(received), message_id, item[REASON]["S"]


def arrival_key(cluster: str, dedup_id: str) -> Key:
    return _key(names.arrival_partition(cluster, dedup_id))


def arrival_dedup_id(item: dict[str, Any]) -> str:
    """The message's deduplication id from its arrival item's key."""
    return item[names.INDEX_PK]["S"].split("#", 1)[1]
