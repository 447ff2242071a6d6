"""Manifests: the agent's statement of which messages hold which txids, so the consumer can
apply events to the namespace index in the cluster's own order.

Message groups let SQS deliver a cluster's events in parallel, and therefore out of txid order
across groups. The lake does not care (compaction sorts), but the namespace index does: a rename
of /a in one group and a create under /a in another give different namespaces in different
orders. A manifest closes a txid range: after every message holding an event with a txid in
(`after`, `end`] was acknowledged by SQS, the agent sends one manifest naming them by their
deduplication ids. Once all of them have arrived, the consumer applies exactly those events,
sorted by (txid, index), and moves on to the next range.

Body (plain JSON; a manifest is a few KiB of ids):

    {"v": 1, "cluster": "prod", "after": 1200, "end": 1450, "part": 0, "parts": 1,
     "range": "5ccb5f677c3e", "messages": ["prod-1201.0-1207.2-9", ...]}

`after` is null for the first range an agent sends with no checkpoint (from the beginning of
the stream). Ranges of one agent are contiguous: the agent saves its checkpoint at a manifest's
`end` only once SQS acknowledged the manifest, and restarts after it. A standby taking over
resends from that checkpoint, so its ranges overlap the old leader's instead of leaving a hole.

Manifests travel in their own message group per cluster (`<cluster>:#manifest`: a path group
key always starts with "/"), so they arrive in the order they were sent, marked by the message
attribute `kind` = `manifest` (names.KIND_ATTRIBUTE, names.KIND_MANIFEST).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hdfs_events.ids import SQS_ID, sqs_safe_id, validate_cluster_name
from hdfs_events.names import KIND_ATTRIBUTE, KIND_MANIFEST
from hdfs_events.validation import JAVA_LONG_MAX, JsonTextError, parse_json, preview

MANIFEST_VERSION = 1
# A manifest stays within one 64 KiB SQS billing chunk: deduplication ids are at most 128
# characters (SQS limit), ~45 for ordinary clusters, so 400 of them fit with room to spare.
MAX_MESSAGES_PER_MANIFEST = 400
# Parts of one range: 10,000 x 400 ids is 4 million messages, far more than one checkpoint
# interval sends; a bound keeps a hostile 'parts' from making the consumer wait for ever.
MAX_PARTS = 10_000


class ManifestError(ValueError):
    """A manifest body that is not valid; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Manifest:
    cluster: str
    after: int | None  # the range is (after, end]; None: from the start of the stream
    end: int
    messages: tuple[str, ...]  # deduplication ids of the messages holding the range's events
    part: int = 0  # a range naming more than MAX_MESSAGES_PER_MANIFEST messages comes in parts
    parts: int = 1
    range_id: str = ""  # the same on every part of one range (a digest of all its ids)

    def __post_init__(self) -> None:
        validate_cluster_name(self.cluster)
        if self.after is not None and self.end <= self.after:
            raise ValueError(f"manifest range ({self.after}, {self.end}] is empty")
        if not 0 <= self.part < self.parts <= MAX_PARTS:
            raise ValueError(f"manifest part {self.part} of {self.parts} (at most {MAX_PARTS})")
        if self.end > JAVA_LONG_MAX:
            raise ValueError(f"manifest 'end' {self.end} is past a Java long txid")
        if len(self.messages) > MAX_MESSAGES_PER_MANIFEST:
            raise ValueError(f"a manifest names at most {MAX_MESSAGES_PER_MANIFEST} messages, "
                             f"got {len(self.messages)}")

    def covers(self, txid: int) -> bool:
        return (self.after is None or txid > self.after) and txid <= self.end

    @property
    def group_id(self) -> str:
        return manifest_group_id(self.cluster)

    @property
    def dedup_id(self) -> str:
        """Same range and same messages, same id: a resend after a restart is dropped by SQS.
        A standby's manifest for the same range names other (re-packed) messages and is kept;
        either one is complete."""
        digest = _digest(self.messages)
        after = "start" if self.after is None else self.after
        return sqs_safe_id(
            f"{self.cluster}-manifest-{after}-{self.end}-{self.part}.{self.parts}-{digest}")

    def to_json(self) -> str:
        return json.dumps({"v": MANIFEST_VERSION, "cluster": self.cluster, "after": self.after,
                           "end": self.end, "part": self.part, "parts": self.parts,
                           "range": self.range_id, "messages": list(self.messages)},
                          separators=(",", ":"))

    def message_attributes(self) -> dict[str, dict[str, str]]:
        """boto3's MessageAttributes shape."""
        return {KIND_ATTRIBUTE: {"DataType": "String", "StringValue": KIND_MANIFEST}}


def manifest_group_id(cluster: str) -> str:
    return sqs_safe_id(f"{cluster}:#manifest")


def is_manifest(attributes: Mapping[str, Any] | None) -> bool:
    """Whether SQS message attributes (boto3's or Lambda's shape) mark a manifest."""
    attr = (attributes or {}).get(KIND_ATTRIBUTE)
    if not isinstance(attr, Mapping):
        return False
    return attr.get("StringValue", attr.get("stringValue")) == KIND_MANIFEST


def decode_manifest(body: str) -> Manifest:
    """The manifest in `body`. Raises ManifestError naming what is wrong."""
    if not isinstance(body, str):
        raise ManifestError(f"manifest body must be text, got {type(body).__name__}")
    try:
        doc = parse_json(body)
    except JsonTextError as exc:
        raise ManifestError(f"manifest body {exc}") from exc
    if not isinstance(doc, dict):
        raise ManifestError(f"manifest must be a JSON object, got {type(doc).__name__}")
    if doc.get("v") != MANIFEST_VERSION or isinstance(doc.get("v"), bool):
        raise ManifestError(f"unsupported manifest version {preview(doc.get('v'))}; this reader knows "
                            f"[{MANIFEST_VERSION}]")
    unknown = doc.keys() - {"v", "cluster", "after", "end", "part", "parts", "range",
                          "messages"}
    if unknown:
        raise ManifestError(f"unknown manifest field(s) {preview(sorted(unknown))}")
    after, end, messages = doc.get("after"), doc.get("end"), doc.get("messages")
    if after is not None and not _is_txid(after):
        raise ManifestError(f"manifest 'after' must be a txid (0..{JAVA_LONG_MAX}) or null, "
                            f"got {preview(after)}")
    if not _is_txid(end):
        raise ManifestError(f"manifest 'end' must be a txid (0..{JAVA_LONG_MAX}), got "
                            f"{preview(end)}")
    part, parts, range_id = doc.get("part", 0), doc.get("parts", 1), doc.get("range", "")
    if not isinstance(range_id, str) or len(range_id) > 64:
        raise ManifestError(f"manifest 'range' must be a string of at most 64 characters, got "
                            f"{preview(range_id)}")
    if not _is_count(part) or not _is_count(parts):
        raise ManifestError(f"manifest 'part' and 'parts' must be whole numbers up to "
                            f"{MAX_PARTS}, got {preview(part)}, {preview(parts)}")
    if not isinstance(messages, list) or not all(
            isinstance(m, str) and SQS_ID.fullmatch(m) for m in messages):
        raise ManifestError("manifest 'messages' must be a list of deduplication ids (1-128 "
                            "printable ASCII characters, SQS's rule)")
    if len(set(messages)) != len(messages):
        raise ManifestError("manifest 'messages' names a message twice")
    if not isinstance(doc.get("cluster"), str):
        raise ManifestError(f"manifest 'cluster' must be a string, got "
                            f"{preview(doc.get('cluster'))}")
    try:
        return Manifest(cluster=doc.get("cluster"), after=after, end=end,  # type: ignore[arg-type]
                        messages=tuple(messages), part=part, parts=parts,
                        range_id=range_id)
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"manifest: {preview(str(exc))}") from exc


def manifests_for(cluster: str, after: int | None, end: int,
                  messages: Sequence[str]) -> list[Manifest]:
    """The manifest(s) of the range (after, end]: `messages` are the deduplication ids of every
    message holding an event in it. Over MAX_MESSAGES_PER_MANIFEST ids the range is sent in
    parts (the consumer waits for all of them); cutting the range instead would not help, since
    each open message group's message straddles any cut."""
    ids = sorted(set(messages))
    chunks = [tuple(ids[i:i + MAX_MESSAGES_PER_MANIFEST])
              for i in range(0, len(ids), MAX_MESSAGES_PER_MANIFEST)] or [()]
    range_id = _digest(ids)
    return [Manifest(cluster, after, end, chunk, part=i, parts=len(chunks), range_id=range_id)
            for i, chunk in enumerate(chunks)]


def _digest(ids: Sequence[str]) -> str:
    return hashlib.blake2b("\n".join(ids).encode(), digest_size=6).hexdigest()


def _is_txid(value: Any) -> bool:
    """A Java long txid, as FSEditLog numbers them."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= JAVA_LONG_MAX


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_PARTS
