"""The SQS message envelope: many events of one message group in one versioned message.

Body, uncompressed:   {"v": 1, "events": [<sparse event>, ...]}
Body, compressed:     base64(gzip(the same JSON)), with message attribute encoding=gzip+base64

An event travels as its sparse JSON (hdfs_events/event.py: the canonical JSON without its null
fields). Readers take a missing field as null, so a body whose events hold every key (what agents
wrote before sparse events) decodes to the same events and the same lake lines; readers of every
release did (HdfsEvent.from_dict), so neither side need be upgraded first.

Versions (docs/contract.md, "Versions"): `v` is the major, an optional `minor` (absent: 0) the
minor. A reader takes every minor of the majors it knows: a newer minor may only add fields, so
the fields a reader knows keep their meaning and are checked as ever, and the fields it does not
know are kept as sent for the lake (`DecodedMessage.lines`, `.unknown_envelope`). A newer major
may change what a known field means: it is refused, and the message waits in quarantine for an
upgraded consumer (`hdfs-events quarantine redrive`).

SQS bodies must be text (XML-safe Unicode), hence base64 around gzip. The encoding travels as a
message attribute so a reader knows how to open the body before looking inside it. Attribute
names and values count toward the SQS size limit, so the one attribute is kept short.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from hdfs_events.event import EventFormatError, HdfsEvent
from hdfs_events.event_json import checked_canonical_json
from hdfs_events.ids import deduplication_id
from hdfs_events.validation import (
    JsonTextError,
    check_message_events,
    parse_json,
    preview,
    split_known_fields,
)

ENVELOPE_VERSION = 1  # the major this code writes
# The minor this code knows every field of. Minor 1 added the event field `children_num`
# (a directory's SNAPSHOT record). A message says the lowest minor its events need, and leaves
# `minor` out at 0, so a message without the field has the bytes consumers deployed before
# minors existed read, and only SNAPSHOT messages of directories say minor 1.
ENVELOPE_MINOR = 1
SUPPORTED_VERSIONS = frozenset({1})  # the majors this code reads
ENVELOPE_FIELDS = frozenset({"v", "minor", "events"})
ENCODING_ATTRIBUTE = "encoding"
ENCODING_JSON = "json"
ENCODING_GZIP = "gzip+base64"
# SQS: 1 MiB (1,048,576 bytes) per message, body plus attribute names, types and values; the
# same 1 MiB bounds a whole SendMessageBatch.
SQS_MAX_MESSAGE_BYTES = 1_048_576
# SQS bills each 64 KiB chunk of a request as one request: the packer's default target.
SQS_BILLING_CHUNK_BYTES = 65_536
# A newer minor's envelope fields are kept as the raw lake objects' S3 user-defined metadata,
# which S3 caps at 2 KB (keys and values); their JSON gets 2,000 bytes of it.
MAX_UNKNOWN_ENVELOPE_BYTES = 2_000
# A compressed body may not expand past this: refuses gzip bombs before they reach memory.
MAX_DECODED_BYTES = 64 * 1_048_576
_cluster = attrgetter("cluster")


class EnvelopeError(ValueError):
    """A message body that is not a valid envelope; the message says what is wrong."""


class MessageTooLarge(EnvelopeError):
    """An encoded message over the SQS limit."""


@dataclass(frozen=True, slots=True)
class WireMessage:
    body: str
    attributes: dict[str, dict[str, str]]  # boto3 MessageAttributes shape
    group_id: str
    dedup_id: str
    event_count: int
    first: tuple[int, int]  # (txid, index) of the first event
    last: tuple[int, int]

    @property
    def size(self) -> int:
        """Bytes SQS counts toward its limits: body plus attribute name, type and value."""
        return len(self.body.encode("utf-8")) + _attributes_size(self.attributes)

    @property
    def billed_requests(self) -> int:
        """64 KiB chunks this message costs when sent on its own."""
        return -(-self.size // SQS_BILLING_CHUNK_BYTES)


def encode_body(event_json: Sequence[str], *, compress: bool, level: int = 6,
                minor: int = 0) -> str:
    """The body text from already-serialised sparse events (the packer keeps them so)."""
    version = f'"v":{ENVELOPE_VERSION},"minor":{minor}' if minor else f'"v":{ENVELOPE_VERSION}'
    raw = f'{{{version},"events":[{",".join(event_json)}]}}'
    if not compress:
        return raw
    packed = gzip.compress(raw.encode("utf-8"), compresslevel=level, mtime=0)
    return base64.b64encode(packed).decode("ascii")


_MINOR_1_FIELD = attrgetter("children_num")  # the field minor 1 added (ENVELOPE_MINOR)


def minor_needed(events: Sequence[HdfsEvent]) -> int:
    """The lowest minor whose fields `events` use (ENVELOPE_MINOR's comment). In C loops, no
    Python call an event: the agent's packer asks it of every run of events it adds."""
    values = list(map(_MINOR_1_FIELD, events))
    return 1 if values.count(None) != len(values) else 0


def encode_message(
    events: Sequence[HdfsEvent],
    *,
    group_id: str,
    compress: bool = True,
    level: int = 6,
    event_json: Sequence[str] | None = None,
) -> WireMessage:
    """One SQS message for `events` (all of one message group, in (txid, index) order).

    Raises MessageTooLarge when the result would exceed the SQS 1 MiB limit.
    """
    if not events:
        raise ValueError("a message needs at least one event")
    if len(set(map(_cluster, events))) != 1:  # in C: the agent seals ~1,000 events at a time
        raise ValueError("a message holds the events of one cluster")
    lines = event_json if event_json is not None else [e.to_sparse_json() for e in events]
    return encode_written(lines, cluster=events[0].cluster,
                          first=(events[0].txid, events[0].index),
                          last=(events[-1].txid, events[-1].index), minor=minor_needed(events),
                          group_id=group_id, compress=compress, level=level)


def encode_written(
    event_json: Sequence[str],
    *,
    cluster: str,
    first: tuple[int, int],
    last: tuple[int, int],
    minor: int,
    group_id: str,
    compress: bool = True,
    level: int = 6,
) -> WireMessage:
    """One SQS message of events already written as their sparse JSON, by a writer that noted
    what encode_message would read from them again: all of `cluster`, keys `first` to `last`
    in order, `minor` the lowest they need (minor_needed). The agent's packer notes these as it
    adds each event, so sealing ~1,600 of them does not read every event again from memory
    they have long left (~0.2 us an event on bench.ship).

    Raises MessageTooLarge when the result would exceed the SQS 1 MiB limit.
    """
    if not event_json:
        raise ValueError("a message needs at least one event")
    body = encode_body(event_json, compress=compress, level=level, minor=minor)
    encoding = ENCODING_GZIP if compress else ENCODING_JSON
    attributes = {ENCODING_ATTRIBUTE: {"DataType": "String", "StringValue": encoding}}
    count = len(event_json)
    message = WireMessage(
        body=body,
        attributes=attributes,
        group_id=group_id,
        dedup_id=deduplication_id(cluster, first, last, count),
        event_count=count,
        first=first,
        last=last,
    )
    if message.size > SQS_MAX_MESSAGE_BYTES:
        raise MessageTooLarge(
            f"encoded message of {count} events is {message.size} bytes; "
            f"SQS allows {SQS_MAX_MESSAGE_BYTES}"
        )
    return message


@dataclass(frozen=True, slots=True)
class DecodedMessage:
    events: list[HdfsEvent]  # the fields this reader knows, checked
    # Each event as the lake keeps it: its canonical JSON, then the fields of a newer minor this
    # reader does not know, as sent (the same JSON values, in the order sent).
    lines: list[str]
    version: tuple[int, int]  # (major, minor)
    unknown_envelope: dict[str, Any]  # envelope fields of a newer minor, as sent


def decode_message(body: str, attributes: Mapping[str, Any] | None = None) -> list[HdfsEvent]:
    """The checked events of a message body; see decode_envelope."""
    return decode_envelope(body, attributes).events


def decode_envelope(body: str, attributes: Mapping[str, Any] | None = None) -> DecodedMessage:
    """The checked events of a message body (hdfs_events.validation: every event, and the
    events together), with what a newer minor added. Raises EnvelopeError naming what is wrong.

    `attributes` may be in boto3's shape ({"encoding": {"StringValue": ...}}) or the shape Lambda
    delivers from an SQS event source ({"encoding": {"stringValue": ...}}).
    """
    doc = _envelope(body, attributes)
    major, minor = doc["v"], doc.get("minor", 0)
    newer = minor > ENVELOPE_MINOR
    events, lines = [], []
    for i, d in enumerate(doc["events"]):
        try:
            known, unknown = split_known_fields(d) if newer else (d, {})
            event = HdfsEvent.from_dict(known)
            line = checked_canonical_json(event)  # check_event's verdict, then the lake's line
        except EventFormatError as exc:
            raise EnvelopeError(f"event {i}: {exc}") from exc
        events.append(event)
        lines.append(_with_unknown(line, unknown) if unknown else line)
    try:
        check_message_events(events)
    except EventFormatError as exc:
        raise EnvelopeError(str(exc)) from exc
    unknown_envelope = {k: v for k, v in doc.items() if k not in ENVELOPE_FIELDS}
    if unknown_envelope and len(unknown_envelope_json(unknown_envelope)) > MAX_UNKNOWN_ENVELOPE_BYTES:
        raise EnvelopeError(f"envelope field(s) {preview(sorted(unknown_envelope))} of minor "
                            f"{minor} take over {MAX_UNKNOWN_ENVELOPE_BYTES} bytes as JSON: the "
                            "lake keeps them as S3 user metadata, 2 KB at most")
    return DecodedMessage(events, lines, (major, minor), unknown_envelope)


def unknown_envelope_json(unknown: Mapping[str, Any]) -> str:
    """A newer minor's envelope fields as the lake keeps them: ASCII JSON, for an S3 header."""
    return json.dumps(unknown, ensure_ascii=True, separators=(",", ":"))


def _with_unknown(line: str, unknown: Mapping[str, Any]) -> str:
    """The canonical line, then the fields of a newer minor this reader does not know."""
    extra = json.dumps(unknown, ensure_ascii=False, separators=(",", ":"))
    return f"{line[:-1]},{extra[1:]}"


def _envelope(body: str, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not isinstance(body, str):
        raise EnvelopeError(f"body must be text, got {type(body).__name__}")
    if len(body) > SQS_MAX_MESSAGE_BYTES:
        raise EnvelopeError(f"body of {len(body)} characters exceeds the SQS 1 MiB limit")
    encoding = _encoding(attributes)
    if encoding == ENCODING_GZIP:
        text = _gunzip(body)
    elif encoding == ENCODING_JSON:
        text = body
    else:
        raise EnvelopeError(
            f"unknown encoding attribute {preview(encoding)}; expected {ENCODING_JSON!r} "
            f"or {ENCODING_GZIP!r}"
        )
    try:
        doc = parse_json(text)
    except JsonTextError as exc:
        raise EnvelopeError(f"body {exc}") from exc
    if not isinstance(doc, dict):
        raise EnvelopeError(f"envelope must be a JSON object, got {type(doc).__name__}")
    version = doc.get("v")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:  # not bool, not {}
        newer = type(version) is int and version > max(SUPPORTED_VERSIONS)
        raise EnvelopeError(
            f"unsupported envelope version {preview(version)}; this reader "
            f"knows major(s) {sorted(SUPPORTED_VERSIONS)}"
            + ("; a newer major may change what known fields mean, so it is refused until the "
               "consumer is upgraded, then redriven (docs/contract.md, Versions)" if newer else ""))
    minor = doc.get("minor", 0)
    if type(minor) is not int or minor < 0:
        raise EnvelopeError(f"envelope field 'minor' must be an integer >= 0, got "
                            f"{preview(minor)}")
    unknown = doc.keys() - ENVELOPE_FIELDS
    if unknown and minor <= ENVELOPE_MINOR:
        raise EnvelopeError(f"unknown envelope field(s) {preview(sorted(unknown))} in minor "
                            f"{minor}, which has none; a newer minor's fields need a 'minor' "
                            f"above {ENVELOPE_MINOR}")
    events = doc.get("events")
    if not isinstance(events, list) or not events:
        raise EnvelopeError("envelope field 'events' must be a non-empty list")
    return doc


def _encoding(attributes: Mapping[str, Any] | None) -> str:
    if not attributes or ENCODING_ATTRIBUTE not in attributes:
        return ENCODING_JSON
    attr = attributes[ENCODING_ATTRIBUTE]
    value = attr.get("StringValue", attr.get("stringValue")) if isinstance(attr, Mapping) else attr
    if not isinstance(value, str):
        raise EnvelopeError(f"attribute {ENCODING_ATTRIBUTE!r} has no string value")
    return value


def _gunzip(body: str) -> str:
    try:
        packed = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EnvelopeError(f"compressed body is not valid base64: {exc}") from exc
    try:
        # wbits=31: gzip framing. max_length bounds the output against decompression bombs.
        inflater = zlib.decompressobj(wbits=31)
        raw = inflater.decompress(packed, MAX_DECODED_BYTES)
        if inflater.unconsumed_tail:
            raise EnvelopeError(f"compressed body expands past {MAX_DECODED_BYTES} bytes")
        if not inflater.eof:
            raise EnvelopeError("compressed body is truncated (gzip stream did not end)")
        if inflater.unused_data:
            # gzip.decompress would read a second member; the agent writes one, and anything
            # after it would be silently dropped by a reader that stops at the first.
            raise EnvelopeError("compressed body holds more than one gzip member")
    except zlib.error as exc:
        raise EnvelopeError(f"compressed body is not valid gzip: {exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"decompressed body is not UTF-8: {exc}") from exc


def _attributes_size(attributes: Mapping[str, Mapping[str, str]]) -> int:
    total = 0
    for name, attr in attributes.items():
        total += len(name.encode()) + len(attr.get("DataType", "").encode())
        total += len(attr.get("StringValue", "").encode())
    return total
