"""Test kit for hostile input: mutations of real envelopes, and the real consumer on in-memory
stores (fast enough for hundreds of hypothesis examples).

Mutations start from what the agent really sends (`encode_message` over events translated from
the bundled NameNode edit log) and break one thing, the way an attacker or a buggy agent would:
a field's value, the JSON text, the gzip/base64 framing, the attributes, or who sent it.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from hdfs_events.event import FIELDS, HdfsEvent
from lambdas.ingest.consumer import MessageConsumer
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.senders import ClusterSenders
from lambdas.ingest.sequencer import IndexSequencer
from tests.unit.ingest.lambda_events import AGENT_SENDER_IDS, Sent, record
from tests.unit.ingest.memory_store import MemoryIndexStore, MemorySequenceStore

SENDERS = ClusterSenders({c: frozenset({s}) for c, s in AGENT_SENDER_IDS.items()})


class MemoryLake:
    """The consumer's Lake (and the sequencer's raw reader) in memory."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, body: bytes, content_type: str) -> None:
        self.objects[key] = body

    def events(self, keys: Sequence[str]) -> list[HdfsEvent]:
        return [HdfsEvent.from_dict(json.loads(line)) for key in keys
                for line in gzip.decompress(self.objects[key]).splitlines() if line]

    def quarantined(self) -> dict[str, dict[str, Any]]:
        return {k: json.loads(v) for k, v in self.objects.items() if k.startswith("quarantine/")}

    def raw_keys(self) -> list[str]:
        return sorted(k for k in self.objects if k.startswith("raw/"))


class RecordingLogger:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def _log(self, level: str, msg: str, *args: object, extra: dict | None = None,
             **kw: object) -> None:
        self.lines.append((level, msg, extra or {}))

    def info(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("INFO", msg, **kw)

    def error(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("ERROR", msg, **kw)

    def warning(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("WARNING", msg, **kw)

    def exception(self, msg: str, *args: object, **kw: Any) -> None:
        self._log("EXCEPTION", msg, **kw)


def in_memory_consumer(prefixes: Sequence[str] = ("/",)) -> tuple[MessageConsumer, MemoryLake,
                                                                   MemoryIndexStore]:
    """The real consumer, sequencer and index on in-memory stores; no continue requests."""
    lake, store = MemoryLake(), MemoryIndexStore()
    sequencer = IndexSequencer(MemorySequenceStore(), NamespaceIndex(store, list(prefixes)), lake)
    consumer = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=None,
                               log_mode="all", logger=RecordingLogger(), senders=SENDERS)
    return consumer, lake, store


def queue_message(sent: Sent, *, sender_id: str | None = None) -> QueueMessage:
    """What the handler hands the consumer for `sent`, as Lambda delivers it."""
    return QueueMessage.from_lambda_record(record(sent, sender_id=sender_id))


# --- mutations --------------------------------------------------------------------------------

def _deep(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


HUGE_DIGITS = st.sampled_from([19, 20, 39, 400, 4_299, 4_301, 20_000])
hostile_ints = (st.integers() | st.sampled_from([-1, -(2**63), 2**63 - 1, 2**63, 2**64, 10**38,
                                                 10**39, 2**31 - 1, 253_402_300_800_000])
                | HUGE_DIGITS.map(lambda n: int("9" * n) if n <= 4_300 else 10**4_000))
hostile_paths = st.sampled_from([
    "", "relative/x", "/", "/a//b", "/a/./b", "/a/../b", "/a/b/", "/a/\x00b", "/a/b:c",
    "/C:\\Users\\x.csv",
    "/a/\ud800b", "/" + "x" * 256, "/" + "\u00e9" * 128, "/" + "/".join(["d"] * 1_001),
    "/" + "/".join(["d" * 200] * 41), "/" + "/".join(["d" * 250] * 9), "/.reserved/raw/x",
    "/data/\u202eexe.gpj", "/data/\uff0f..\uff0fetc",
])
hostile_strings = (st.text(max_size=20) | hostile_paths
                   | st.sampled_from([300, 70_000, 600_000]).map(lambda n: "a" * n))
hostile_values = (st.none() | st.booleans() | hostile_ints
                  | st.floats(allow_nan=False) | hostile_strings
                  | st.lists(st.integers(), max_size=3) | st.just({"a": 1})
                  | st.sampled_from([5, 50, 400]).map(_deep))  # deeper: the "deep" text mutation


@st.composite
def field_mutation(draw: st.DrawFn, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One event's field (or an unknown one) set to a hostile value, or removed."""
    i = draw(st.integers(0, len(events) - 1))
    name = draw(st.sampled_from([*FIELDS, "extra"]))
    mutated = [dict(e) for e in events]
    if draw(st.booleans()) and name in mutated[i]:
        del mutated[i][name]
    else:
        mutated[i][name] = draw(hostile_values)
    return mutated


def envelope_text(events: list[dict[str, Any]], v: Any = 1) -> str:
    return json.dumps({"v": v, "events": events}, ensure_ascii=False)


def gzip_base64(text: str | bytes) -> str:
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return base64.b64encode(gzip.compress(raw, mtime=0)).decode()


@st.composite
def mutated_body(draw: st.DrawFn, sent: Sent) -> tuple[str, str | None]:
    """(body, encoding attribute) of `sent` with one thing broken."""
    doc = json.loads(gzip.decompress(base64.b64decode(sent.body)))
    events: list[dict[str, Any]] = doc["events"]
    text = envelope_text(events)
    kind = draw(st.sampled_from([
        "field", "field", "field", "duplicate-key", "deep", "text-cut", "text-insert",
        "second-member", "gzip-cut", "base64", "encoding", "version", "reorder", "plain-json",
    ]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if kind == "field":
        return gzip_base64(envelope_text(draw(field_mutation(events)))), "gzip+base64"
    if kind == "duplicate-key":
        return gzip_base64(text.replace('{"cluster"', '{"txid":1,"cluster"', 1)), "gzip+base64"
    if kind == "deep":
        depth = draw(st.sampled_from([17, 100, 990, 5_000, 100_000]))
        return gzip_base64(text[:-2] + "," + "[" * depth + "]" * depth + "]}"), "gzip+base64"
    if kind == "text-cut":
        return gzip_base64(text[:rng.randrange(len(text))]), "gzip+base64"
    if kind == "text-insert":
        at = rng.randrange(len(text))
        junk = draw(st.sampled_from(['"', "{", "]", ",", "\\", "\x00", "\ud800", "1e999",
                                     "NaN", "-", "9" * 5_000]))
        return gzip_base64(text[:at] + junk + text[at:]), "gzip+base64"
    if kind == "second-member":
        packed = gzip.compress(text.encode(), mtime=0)
        extra = gzip.compress(envelope_text(events[:1]).encode(), mtime=0)
        return base64.b64encode(packed + extra).decode(), "gzip+base64"
    if kind == "gzip-cut":
        packed = gzip.compress(text.encode(), mtime=0)
        return base64.b64encode(packed[:rng.randrange(len(packed))]).decode(), "gzip+base64"
    if kind == "base64":
        at = rng.randrange(len(sent.body))
        return sent.body[:at] + draw(st.sampled_from(["!", "=", "\u00e9", " "])) + \
            sent.body[at + 1:], "gzip+base64"
    if kind == "encoding":
        return sent.body, draw(st.sampled_from([None, "json", "zstd", "", "GZIP+BASE64"]))
    if kind == "version":
        return gzip_base64(envelope_text(events, v=draw(hostile_values))), "gzip+base64"
    if kind == "reorder":
        return gzip_base64(envelope_text(list(reversed(events)) + events[:1])), "gzip+base64"
    return text, "json"  # the same events, uncompressed: valid


def with_body(sent: Sent, body: str, encoding: str | None) -> Sent:
    return replace(sent, body=body, encoding=encoding)
