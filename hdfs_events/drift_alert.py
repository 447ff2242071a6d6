"""The drift alert: what `hdfs-events-agent verify` sends to the drift alert queue and
`hdfs-events drift receive` reads. One JSON message body per path verify found differing
between HDFS and the namespace index (the S3mper idea), and past the agent's cap one summary
saying how many more were found but not sent one by one.

A path alert (`"kind": "drift"`):
  cluster, path, prefix (the prefix verify checked), drift (verify's word for the difference:
  `missing` in HDFS but not in the index; `extra` in the index but not in HDFS; `type`, `size`,
  `mtime` differ), hdfs and index (the two values of the field that differs, null for
  missing/extra), index_txid (the txid the index entry had reached; for `missing` the highest
  any entry compared before it had: a change in HDFS after it may still be in flight), run_id and
  run_time (one verify run: every alert it sent carries them), version.
A summary (`"kind": "drift-summary"`): cluster, run_id, run_time, sent (path alerts this run
sent), more (drifting paths past the cap, not sent), version.

Builds and parses bytes only; no I/O.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

VERSION = 1
KIND_PATH = "drift"
KIND_SUMMARY = "drift-summary"
DRIFT_KINDS = ("missing", "extra", "type", "size", "mtime")

Value = str | int | None


class DriftAlertError(ValueError):
    """A message body that is not a drift alert; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class VerifyRun:
    cluster: str
    run_id: str
    run_time: str  # ISO 8601, UTC


@dataclass(frozen=True, slots=True)
class PathDrift:
    cluster: str
    run_id: str
    run_time: str
    prefix: str
    path: str
    drift: str
    hdfs: Value = None
    index: Value = None
    index_txid: int | None = None

    def body(self) -> str:
        return json.dumps({"kind": KIND_PATH, "version": VERSION, **asdict(self)},
                          separators=(",", ":"), ensure_ascii=False)

    def line(self) -> str:
        txid = f" (index at txid {self.index_txid})" if self.index_txid is not None else ""
        if self.drift == "missing":
            what = "in HDFS, missing from the index"
        elif self.drift == "extra":
            what = "in the index, not in HDFS"
        else:
            what = f"{self.drift} differs: hdfs={self.hdfs} index={self.index}"
        return f"{self.run_time} {self.cluster} {self.path}: {what}{txid}"


@dataclass(frozen=True, slots=True)
class DriftSummary:
    cluster: str
    run_id: str
    run_time: str
    sent: int
    more: int

    def body(self) -> str:
        return json.dumps({"kind": KIND_SUMMARY, "version": VERSION, **asdict(self)},
                          separators=(",", ":"), ensure_ascii=False)

    def line(self) -> str:
        return (f"{self.run_time} {self.cluster}: {self.more} more drifting paths past the cap "
                f"([verify] alert_max_paths; {self.sent} sent): run verify by hand for all")


def path_drift(run: VerifyRun, prefix: str, *, kind: str, path: str, hdfs: Any = None,
               index: Any = None, index_txid: int | None = None) -> PathDrift:
    """One path alert from verify's fields; values other than ints and strings as strings."""
    if kind not in DRIFT_KINDS:
        raise DriftAlertError(f"drift: {kind!r} is not one of {DRIFT_KINDS}")
    return PathDrift(run.cluster, run.run_id, run.run_time, prefix, path, kind,
                     _value(hdfs), _value(index), index_txid)


def parse_alert(body: str) -> PathDrift | DriftSummary:
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        raise DriftAlertError(f"body: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DriftAlertError("body: must be a JSON object")
    version = doc.get("version")
    if version != VERSION:
        raise DriftAlertError(f"version: must be {VERSION}, got {version!r}")
    fields = _Fields(doc)
    common = (fields.text("cluster"), fields.text("run_id"), fields.text("run_time"))
    kind = doc.get("kind")
    if kind == KIND_SUMMARY:
        return DriftSummary(*common, sent=fields.count("sent"), more=fields.count("more"))
    if kind != KIND_PATH:
        raise DriftAlertError(f"kind: must be {KIND_PATH!r} or {KIND_SUMMARY!r}, got {kind!r}")
    drift = fields.text("drift")
    if drift not in DRIFT_KINDS:
        raise DriftAlertError(f"drift: {drift!r} is not one of {DRIFT_KINDS}")
    txid = doc.get("index_txid")
    if txid is not None and (not isinstance(txid, int) or isinstance(txid, bool)):
        raise DriftAlertError(f"index_txid: must be an integer or null, got {txid!r}")
    return PathDrift(*common, prefix=fields.text("prefix"), path=fields.text("path"),
                     drift=drift, hdfs=fields.value("hdfs"), index=fields.value("index"),
                     index_txid=txid)


class _Fields:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def text(self, key: str) -> str:
        value = self.doc.get(key)
        if not isinstance(value, str) or not value:
            raise DriftAlertError(f"{key}: must be a non-empty string, got {value!r}")
        return value

    def count(self, key: str) -> int:
        value = self.doc.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DriftAlertError(f"{key}: must be an integer >= 0, got {value!r}")
        return value

    def value(self, key: str) -> Value:
        value = self.doc.get(key)
        if value is not None and (not isinstance(value, str | int) or isinstance(value, bool)):
            raise DriftAlertError(f"{key}: must be a string, an integer or null, got {value!r}")
        return value


def _value(value: Any) -> Value:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return str(value)
