"""Reads what the chain left in the lake (as a user of the lake would: the curated table through
its catalog, the rollup tables, the quarantine) and turns it into the demo's report."""

from __future__ import annotations

import base64
import gzip
import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from bench.demo.index_check import IndexCheck
from bench.demo.report import DemoReport
from hdfs_events.event import FIELD_SET, FIELDS, HdfsEvent

CATALOG = "curated/_catalog/events.json"

# What a broken or hostile producer might put on the queue: each must be quarantined with its
# reason, and none may block its message group.
POISON_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("this is not JSON", {}),
    ('{"v": 99, "events": []}', {}),
    (base64.b64encode(b"not gzip at all").decode(),
     {"encoding": {"DataType": "String", "StringValue": "gzip+base64"}}),
    (base64.b64encode(gzip.compress(b'{"v":1,"events":[{"cluster":"demo","txid":"x"}]}')).decode(),
     {"encoding": {"DataType": "String", "StringValue": "gzip+base64"}}),
]


def lake_differences(rows: Sequence[dict[str, Any]], expected: Sequence[HdfsEvent],
                     limit: int = 3) -> list[str]:
    """How the curated rows differ from the source, field by field (every field of the
    contract, as tests/e2e compares them); empty when they are equal."""
    got = {(r["cluster"], r["txid"], r["index"]): {f: r[f] for f in FIELDS} for r in rows}
    want = {e.key: {f: v for f, v in e.to_dict().items() if f in FIELD_SET} for e in expected}
    out = []
    if len(rows) != len(got):
        out.append(f"{len(rows) - len(got)} (cluster, txid, index) keys appear twice in the lake")
    for key in sorted(want.keys() - got.keys())[:limit]:
        out.append(f"txid {key[1]} index {key[2]}: missing from the lake")
    for key in sorted(got.keys() - want.keys())[:limit]:
        out.append(f"txid {key[1]} index {key[2]}: in the lake, not in the source")
    for key in sorted(want.keys() & got.keys()):
        if len(out) >= 2 * limit:
            break
        differ = [f for f in FIELDS if got[key][f] != want[key][f]]
        if differ:
            out.append(f"txid {key[1]} index {key[2]}: "
                       + ", ".join(f"{f} {got[key][f]!r} != {want[key][f]!r}" for f in differ))
    return out


def curated_table(lake: Path) -> pa.Table:
    """The curated events at the locations the catalog names (never superseded runs)."""
    doc = json.loads((lake / CATALOG).read_text())
    tables = []
    for part in doc["partitions"].values():
        location = part["location"]
        path = Path(location.removeprefix("file://")) if location.startswith("file:") else lake / location
        table = ds.dataset(str(path), format="parquet").to_table()
        n = table.num_rows
        table = table.append_column("cluster", pa.array([part["cluster"]] * n))
        tables.append(table.append_column("dt", pa.array([part["dt"]] * n)))
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})


def _rows(lake: Path, name: str) -> list[dict[str, Any]]:
    root = lake / "curated" / name
    if not root.exists():
        return []
    return ds.dataset(str(root), format="parquet", partitioning="hive").to_table().to_pylist()


def _raw_rows(lake: Path) -> int:
    return sum(sum(1 for _ in gzip.open(p, "rt")) for p in (lake / "raw").rglob("*.jsonl.gz"))


def _quarantine_reasons(lake: Path) -> list[str]:
    reasons = []
    for path in sorted((lake / "quarantine" / "ingest").rglob("*.json")):
        reasons.append(json.loads(path.read_text()).get("reason", "?"))
    return reasons


def _log_lines(log_path: Path, limit: int = 12) -> list[str]:
    picked: list[str] = []
    kinds: Counter[str] = Counter()
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{") or '"_aws"' in line:
            continue  # EMF metric documents are CloudWatch's, not log lines a person reads
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = f"{doc.get('message')}:{doc.get('type', '')}"
        if kinds[kind] < 1:
            kinds[kind] += 1
            picked.append(line)
        if len(picked) >= limit:
            break
    return picked


def _activity(timestamps: list[int], buckets: int = 40) -> list[tuple[str, int]]:
    """Events per time bucket, the bucket sized so the span shows as about `buckets` points
    (a generated workload spans seconds; a real day spans hours)."""
    if not timestamps:
        return []
    start, end = min(timestamps), max(timestamps)
    width = max(1000, -(-(end - start + 1) // buckets))
    counts = Counter((t - start) // width for t in timestamps)
    fmt = "%H:%M:%S" if width < 60_000 else "%m-%d %H:%M"
    return [(datetime.fromtimestamp((start + i * width) / 1000, UTC).strftime(fmt), counts.get(i, 0))
            for i in range(max(counts) + 1)]


def build_report(*, lake: Path, expected: Sequence[HdfsEvent], consumer: dict[str, Any],
                 log_path: Path, compaction: dict[str, Any], rollups: dict[str, Any],
                 agent_kills: int, dlq_depth: int, index: IndexCheck | None = None,
                 provenance: Sequence[str] = (), source_name: str = "the source") -> DemoReport:
    """`expected` is the source of truth; `provenance` says where each part came from (what was
    live, what replayed)."""
    table = curated_table(lake)
    rows = table.to_pylist() if table.num_rows else []
    lake_keys = sorted((r["txid"], r["index"], r["type"]) for r in rows)
    differences = lake_differences(rows, expected)
    activity = _activity([r["timestamp"] for r in rows
                          if r["timestamp"] and r["timestamp"] > 1_600_000_000_000])
    by_dir: Counter[str] = Counter()
    for row in _rows(lake, "activity_daily"):
        by_dir[row["prefix"]] += max(int(row.get("bytes_written") or 0), 0)
    mass = [(f"{r['scope']} {r['subject']}",
             f"{r['window_start']:%H:%M}-{r['window_end']:%H:%M}" if hasattr(r["window_start"], "strftime")
             else str(r["window_start"]), int(r["unlinks"]))
            for r in _rows(lake, "mass_deletes")]
    reasons = _quarantine_reasons(lake)
    return DemoReport(
        source_events=len(expected),
        source_name=source_name,
        provenance=list(provenance),
        lake_differences=differences,
        events_by_type=dict(Counter(t for _, _, t in lake_keys)),
        lake_rows=len(lake_keys),
        raw_rows=_raw_rows(lake),
        quarantined=len(reasons),
        quarantine_reasons=reasons,
        lag_ms=consumer.get("latency_ms", []),
        activity=activity,
        top_dirs_by_bytes=by_dir.most_common(10),
        mass_deletes=sorted(mass, key=lambda m: -m[2]),
        log_lines=_log_lines(log_path),
        figures={
            "Lake equals source exactly (every field)": "NO" if differences else "yes",
            **({} if index is None else {
                "Index equals the events applied in order": "yes" if index.exact else "NO",
                f"Index entries under {', '.join(index.prefixes)}": str(index.entries)}),
            "Agent SIGKILLs survived": str(agent_kills),
            "Consumer redeliveries (transient faults)": str(consumer.get("failures", 0)),
            "Messages left in the DLQ": str(dlq_depth),
            "Parquet files published": str(compaction.get("files_written", "?")),
            "Days rolled up": str(len(rollups.get("days", []))),
            "Mass-delete windows flagged": str(rollups.get("mass_delete_windows", 0)),
        },
    )
