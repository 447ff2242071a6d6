"""Reads what the chain left in the lake bucket (as a user of the lake would: the curated table
through its catalog, the rollup tables, the quarantine; tests/kit/lake_reads.py), through boto3,
and turns it into the demo's report."""

from __future__ import annotations

import gzip
import json
import posixpath
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from demo.report import DemoReport, MassDelete
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.layout import ATTRIBUTION_LOCAL_CATALOG_KEY, AUDIT_LOCAL_CATALOG_KEY
from glue_jobs.storage import LakeStore
from hdfs_events.event import FIELD_SET, FIELDS, HdfsEvent
from hdfs_events.lake_layout import (
    ATTRIBUTION_TABLE,
    AUDIT_TABLE,
    CURATED_PREFIX,
    RAW_PREFIX,
)
from tests.kit.index_check import IndexCheck
from tests.kit.lake_reads import catalogued, curated_table, parquet_tables, quarantined_messages

ATTRIBUTION_CHECKED = "Attribution check (see attribution_problems)"


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


def attribution_rows(lake: LakeStore) -> list[dict[str, Any]]:
    """Who made each change (glue_jobs.attribute_events), at its catalog's locations."""
    table = catalogued(lake, JsonFileCatalog(lake, ATTRIBUTION_LOCAL_CATALOG_KEY,
                                              ATTRIBUTION_TABLE))
    return table.to_pylist() if table.num_rows else []


def made_as_parents(events: Sequence[dict[str, Any]], lake: LakeStore) -> set[tuple[str, int, int]]:
    """The directories a create or mkdirs made as parents: no audit line names them (the
    NameNode audits the call once, with the path it was given), so no join can find a user."""
    table = catalogued(lake, JsonFileCatalog(lake, AUDIT_LOCAL_CATALOG_KEY, AUDIT_TABLE))
    named = set() if not table.num_rows else {
        (r["cluster"], r["src"]) for r in table.select(["cluster", "cmd", "src"]).to_pylist()
        if r["cmd"] == "mkdirs"}
    return {(e["cluster"], e["txid"], e["index"]) for e in events
            if e["type"] == "CREATE" and e["inode_type"] == "DIRECTORY"
            and (e["cluster"], e["path"]) not in named}


def _rows(lake: LakeStore, name: str) -> list[dict[str, Any]]:
    """A dt-partitioned rollup table's rows, dt taken from each object's key."""
    rows = []
    for key, table in parquet_tables(lake, f"{CURATED_PREFIX}{name}/"):
        dt = key.split("/dt=", 1)[1].split("/", 1)[0]
        rows += [{**r, "dt": dt} for r in table.to_pylist()]
    return rows


def _raw_rows(lake: LakeStore) -> int:
    return sum(gzip.decompress(lake.read_bytes(o.key)).count(b"\n")
               for o in lake.list_objects(RAW_PREFIX) if o.key.endswith(".jsonl.gz"))


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


def is_delete(row: dict[str, Any]) -> bool:
    """What the rollups count as a delete: an UNLINK, or a RENAME into a trash directory."""
    return row["type"] == "UNLINK" or (
        row["type"] == "RENAME" and "/.Trash/" in (row.get("dst_path") or ""))


def named_mass_delete(window: dict[str, Any], events: Sequence[dict[str, Any]]) -> MassDelete:
    """A mass-delete row as the report shows it: its users as the rollups named them, and the
    directory holding its deletes (the events between its first and last txid that delete,
    under its prefix for a prefix row; an owner row's owner is the rollups' path state, not on
    the event: every delete of its txids)."""
    start, end = window["window_start"], window["window_end"]
    under = window["subject"].rstrip("/") + "/" if window["scope"] == "prefix" else "/"
    paths = [e["path"] for e in events
             if (e["cluster"] == window["cluster"]
                 and window["first_txid"] <= e["txid"] <= window["last_txid"]
                 and is_delete(e) and e["path"].startswith(under))]
    return MassDelete(
        scope=window["scope"], subject=window["subject"],
        window=(f"{start:%H:%M}-{end:%H:%M}" if hasattr(start, "strftime") else str(start)),
        files_removed=int(window["files_removed"]),
        under=posixpath.dirname(paths[0]) if len(set(paths)) == 1 else (
            posixpath.commonpath(paths) if paths else ""),
        user=window["user"], unattributed=int(window.get("unattributed_deletes") or 0))


def attribution_problems(events: Sequence[dict[str, Any]],
                         who: dict[tuple[str, int, int], str | None], *,
                         min_share: float | None, mass_delete_user: str | None,
                         mass_delete_paths: Sequence[str],
                         parents: set[tuple[str, int, int]] = frozenset(),
                         mass_min_share: float = 0.99) -> list[str]:
    """The demo's claim about the audit join, as failures: every event here was made by a
    client call the NameNode audited, so at least `min_share` (when given) of those an audit
    line names (all but `parents`: made_as_parents) must have a user; and no UNLINK of the mass
    delete run as `mass_delete_user` may name anyone else, `mass_min_share` of them that user."""
    out = []
    named = [e for e in events if (e["cluster"], e["txid"], e["index"]) not in parents]
    attributed = sum(1 for e in named if who.get((e["cluster"], e["txid"], e["index"])))
    if min_share is not None and named and attributed < min_share * len(named):
        missing = Counter(e["type"] for e in named
                          if not who.get((e["cluster"], e["txid"], e["index"])))
        out.append(f"{attributed:,} of the {len(named):,} events an audit line names have a "
                   f"user ({100 * attributed / len(named):.2f} %), under {100 * min_share:.0f} %;"
                   " without one: " + ", ".join(f"{t} {n:,}" for t, n in missing.most_common()))
    if mass_delete_user is None:
        return out
    deleted = set(mass_delete_paths)
    users: Counter[str | None] = Counter(
        who.get((e["cluster"], e["txid"], e["index"])) for e in events
        if e["type"] == "UNLINK" and e["path"] in deleted)
    others = {u: n for u, n in users.items() if u not in (None, mass_delete_user)}
    if others:
        out.append(f"the mass delete run as {mass_delete_user} is attributed to "
                   + ", ".join(f"{u} ({n})" for u, n in others.items()))
    if users[mass_delete_user] < mass_min_share * len(deleted):
        out.append(f"{users[mass_delete_user]:,} of the mass delete's {len(deleted):,} UNLINKs "
                   f"are attributed to {mass_delete_user}, under {100 * mass_min_share:.0f} %")
    return out


def build_report(*, lake: LakeStore, expected: Sequence[HdfsEvent], consumer: dict[str, Any],
                 log_path: Path, compaction: dict[str, Any], rollups: dict[str, Any],
                 agent_kills: int, dlq_depth: int, index: IndexCheck | None = None,
                 provenance: Sequence[str] = (), source_name: str = "the source",
                 mass_delete_user: str | None = None, mass_delete_paths: Sequence[str] = (),
                 min_attributed: float | None = None) -> DemoReport:
    """`expected` is the source of truth; `provenance` says where each part came from (what was
    live, what replayed); `mass_delete_user` ran the UNLINKs of `mass_delete_paths` (the
    attribution is checked against it, and the share of events with a user against
    `min_attributed` when given: see attribution_problems)."""
    table = curated_table(lake)
    rows = table.to_pylist() if table.num_rows else []
    attribution = attribution_rows(lake)
    lake_keys = sorted((r["txid"], r["index"], r["type"]) for r in rows)
    differences = lake_differences(rows, expected)
    activity = _activity([r["timestamp"] for r in rows
                          if r["timestamp"] and r["timestamp"] > 1_600_000_000_000])
    by_dir: Counter[str] = Counter()
    for row in _rows(lake, "activity_daily"):
        by_dir[row["prefix"]] += max(int(row.get("bytes_written") or 0), 0)
    who = {(r["cluster"], r["txid"], r["index"]): r["user"] for r in attribution}
    mass = [named_mass_delete(r, rows) for r in _rows(lake, "mass_deletes")]
    reasons = [m.get("reason", "?") for m in quarantined_messages(lake)]
    parents = made_as_parents(rows, lake)
    checked = min_attributed is not None or mass_delete_user is not None
    problems = [] if not checked else attribution_problems(
        rows, who, min_share=min_attributed, mass_delete_user=mass_delete_user,
        mass_delete_paths=mass_delete_paths, parents=parents)
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
        mass_deletes=sorted(mass, key=lambda m: -m.files_removed),
        attributed=sum(1 for r in rows if who.get((r["cluster"], r["txid"], r["index"]))),
        attribution_problems=problems,
        made_as_parents=len(parents),
        attributed_parents=sum(1 for k in parents if who.get(k)),
        log_lines=_log_lines(log_path),
        figures={
            "Lake equals source exactly (every field)": "NO" if differences else "yes",
            **({} if index is None else {
                "Index equals the events applied in order": "yes" if index.exact else "NO",
                f"Index entries under {', '.join(index.prefixes)}": str(index.entries)}),
            "Agent SIGKILLs survived": str(agent_kills),
            "Consumer redeliveries (transient faults)": str(consumer.get("failures", 0)),
            "Messages left in the DLQs": str(dlq_depth),
            "Parquet files published": str(compaction.get("files_written", "?")),
            "Days rolled up": str(len(rollups.get("days", []))),
            "Mass-delete windows flagged": str(rollups.get("mass_delete_windows", 0)),
            **({} if not checked else {
                ATTRIBUTION_CHECKED: "NO" if problems else "yes"}),
        },
    )
