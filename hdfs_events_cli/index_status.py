"""Where the namespace index stands: how far the consumer applied the cluster's txids, whether a
walk or an invocation applying ranges is under way, and what the next txid range still waits for.

Read-only, from the consumer's sequencer items in the index table (hdfs_events.sequencer_items), for the
runbook of the index-stalled alarm: `hdfs-events index status --cluster prod`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hdfs_events import names
from hdfs_events.manifest import ManifestError
from hdfs_events.sequencer_items import (
    LEASE_UNTIL_MS,
    POSITION_INDEX,
    POSITION_TXID,
    POSITION_WALK,
    TXID_DONE,
    arrival_dedup_id,
    arrival_key,
    manifests_ending_from,
    position_key,
    stored_manifest,
)

_LOOKAHEAD = 20


@dataclass(frozen=True, slots=True)
class IndexStatus:
    cluster: str
    txid: int | None  # applied up to here (None: nothing yet)
    # ... and up to this event of it (None: all of it). Named `index` as HdfsEvent's field: it is
    # a key of `index status --json`.
    index: int | None
    walk: dict[str, Any] | None  # a subtree walk still going on: kind, src, dst, step
    lease_until_ms: int | None  # an invocation is applying ranges until then
    next_range: tuple[int | None, int] | None  # (after, end] of the range that continues
    manifest_received_ms: int | None
    messages: int  # messages the next range names
    missing: tuple[str, ...]  # ... of which these have not arrived
    parts_missing: int  # manifest parts of the next range not stored yet
    hole_before: int | None  # a later range is stored but none continues: it starts after this

    @property
    def waiting(self) -> bool:
        return bool(self.missing or self.parts_missing or self.hole_before is not None)


def read_status(client: Any, table: str, cluster: str) -> IndexStatus:
    position = client.get_item(TableName=table, ConsistentRead=True,
                               Key=position_key(cluster)).get("Item", {})
    txid = int(position[POSITION_TXID]["N"]) if POSITION_TXID in position else None
    index = int(position[POSITION_INDEX]["N"]) if POSITION_INDEX in position else None
    walk = json.loads(position[POSITION_WALK]["S"]) if POSITION_WALK in position else None
    lease = int(position[LEASE_UNTIL_MS]["N"]) if LEASE_UNTIL_MS in position else None
    want = None if txid is None else (txid + 1 if index == TXID_DONE else txid)
    items = client.query(
        TableName=table, ConsistentRead=True, Limit=_LOOKAHEAD,
        KeyConditionExpression="#pk = :pk AND #sk >= :from",
        ExpressionAttributeNames={"#pk": names.INDEX_PK, "#sk": names.INDEX_SK},
        ExpressionAttributeValues={":pk": {"S": names.manifests_partition(cluster)},
                                   ":from": manifests_ending_from(want or 0)})["Items"]
    parts = []
    for item in items:
        try:
            parts.append(stored_manifest(item))
        except ManifestError:
            continue  # never stored by the consumer, which decodes before storing
    covering = [(m, r) for m, r in parts if want is None or m.covers(want)]
    if not covering:
        return IndexStatus(cluster, txid, None if index == TXID_DONE else index,
                           _walk(walk), lease, None, None, 0, (), 0,
                           want - 1 if parts and want is not None else None)
    first, _ = min(covering, key=lambda p: p[0].end)
    same = [(m, r) for m, r in covering if (m.after, m.end, m.range_id) ==
            (first.after, first.end, first.range_id)]
    ids = sorted({i for m, _ in same for i in m.messages})
    arrived = _arrived(client, table, cluster, ids)
    return IndexStatus(
        cluster, txid, None if index == TXID_DONE else index, _walk(walk), lease,
        (first.after, first.end), min(r for _, r in same), len(ids),
        tuple(i for i in ids if i not in arrived),
        first.parts - len({m.part for m, _ in same}), None)


def _arrived(client: Any, table: str, cluster: str, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), 100):  # BatchGetItem takes 100 keys
        keys = [arrival_key(cluster, i) for i in ids[start:start + 100]]
        request = {table: {"Keys": keys, "ConsistentRead": True,
                           "ProjectionExpression": "#pk", "ExpressionAttributeNames": {
                               "#pk": names.INDEX_PK}}}
        while request:
            response = client.batch_get_item(RequestItems=request)
            found |= {arrival_dedup_id(item)
                      for item in response.get("Responses", {}).get(table, [])}
            request = response.get("UnprocessedKeys") or {}
    return found


def _walk(op: dict[str, Any] | None) -> dict[str, Any] | None:
    if op is None:
        return None
    return {"kind": op.get("kind"), "src": op.get("src"), "dst": op.get("dst"),
            "txid": op.get("version", [None])[0], "step": op.get("step")}


def describe(status: IndexStatus, now_ms: int) -> list[str]:
    """The status as the lines `hdfs-events index status` prints."""
    if status.txid is None:
        lines = [f"cluster {status.cluster}: nothing applied yet"]
    elif status.index is None:
        lines = [f"cluster {status.cluster}: applied up to txid {status.txid}"]
    else:
        lines = [f"cluster {status.cluster}: applied up to txid {status.txid}, event "
                 f"{status.index}"]
    if status.walk:
        w = status.walk
        lines.append(f"subtree walk in progress: {w['kind']} {w['src']}"
                     f"{' -> ' + w['dst'] if w['dst'] else ''} (txid {w['txid']}, "
                     f"step {w['step']}); the next invocation goes on with it")
    if status.lease_until_ms is not None and status.lease_until_ms > now_ms:
        left_s = (status.lease_until_ms - now_ms) / 1000
        lines.append(f"an invocation is applying ranges (its lease runs {left_s:.0f} s more)")
    if status.hole_before is not None:
        lines.append(f"WAITING: no stored range continues after txid {status.hole_before}, but "
                     "later ones are stored: the manifest of the next txids is late or lost")
    elif status.next_range is None:
        lines.append("caught up: no manifest stored beyond the position")
    else:
        after, end = status.next_range
        age = (now_ms - (status.manifest_received_ms or now_ms)) / 1000
        start = after if after is not None else "start"
        head = (f"next range ({start}, {end}]: {status.messages} message(s), manifest stored "
                f"{age:.0f} s ago")
        if status.parts_missing:
            lines.append(f"WAITING: {head}; {status.parts_missing} manifest part(s) not stored")
        elif status.missing:
            shown = ", ".join(status.missing[:5]) + (" ..." if len(status.missing) > 5 else "")
            lines.append(f"WAITING: {head}; {len(status.missing)} not arrived: {shown} "
                         "(in flight, failing, or in the DLQ: redrive it)")
        else:
            lines.append(f"{head}; complete: the next invocation applies it")
    return lines
