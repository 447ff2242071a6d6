"""Who made each mass delete: the attribution job and the activity rollups run in turn on one lake
on the local file system, as the Glue workflow runs them (attribution first), each through its
entry script with the job's arguments; curated events and audit partitions published through
their JSON catalogs as the compactions publish them.

One day, a 10-minute window, a threshold of 3 files. Window A (10:00, under /w/a): zed removes
3 files, amy 1, and one UNLINK has no audit line. Window B (11:00, under /w/b): 3 UNLINKs whose
audit lines reach the lake only after the first rollups run.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from glue_jobs import activity_rollups, attribute_events, rollup_days
from glue_jobs.audit_io import read_audit_table, write_audit_runs
from glue_jobs.audit_schema import AUDIT_COLUMNS
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compact_audit import audit_catalog
from glue_jobs.curated_io import write_runs
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.storage import LocalStore
from hdfs_events.audit import AuditRecord, LineSource, parse_line
from hdfs_events.event import EventType, HdfsEvent
from hdfs_events.lake_layout import AUDIT_PREFIX, EVENTS_PREFIX, MASS_DELETES_PREFIX, new_run_id, run_prefix
from tests.integration.glue.frames import curated_frame
from tests.integration.glue.rollup_outputs import MASS_DELETE_SCHEMA, read_table

pytestmark = pytest.mark.slow
C = "c1"
DAY = "2026-11-20"
A = int(datetime(2026, 11, 20, 10, 0, 0, tzinfo=UTC).timestamp() * 1000)
B = int(datetime(2026, 11, 20, 11, 0, 0, tzinfo=UTC).timestamp() * 1000)
ROLLUP_ARGS = ("--mass_delete_window_minutes", "10", "--mass_delete_threshold", "3")

# (txid, path, NameNode ms, who deleted it: None for no audit line)
WINDOW_A = [(1, "/w/a/f1", A + 1_000, "zed"), (2, "/w/a/f2", A + 2_000, "amy"),
            (3, "/w/a/f3", A + 3_000, "zed"), (4, "/w/a/f4", A + 4_000, None),
            (5, "/w/a/f5", A + 5_000, "zed")]
WINDOW_B = [(6, "/w/b/g1", B + 1_000, "bob"), (7, "/w/b/g2", B + 2_000, "bob"),
            (8, "/w/b/g3", B + 3_000, "bob")]


def unlinks(deletes: list[tuple[int, str, int, str | None]]) -> list[HdfsEvent]:
    return [HdfsEvent(cluster=C, txid=t, index=0, type=EventType.UNLINK, path=p, timestamp=ms)
            for t, p, ms, _ in deletes]


def audit_lines(deletes: list[tuple[int, str, int, str | None]]) -> list[AuditRecord]:
    """The NameNode's `delete` line of each attributed UNLINK, written 5 ms after its edit."""
    out = []
    for txid, path, ms, user in deletes:
        if user is None:
            continue
        stamp = datetime.fromtimestamp((ms + 5) / 1000, UTC)
        text = (f"{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} INFO "
                f"FSNamesystem.audit: allowed=true\tugi={user} (auth:SIMPLE)\tip=/10.0.0.1\t"
                f"cmd=delete\tsrc={path}\tdst=null\tperm=null\tproto=rpc")
        out.append(parse_line(text, C, LineSource("nn1", "f1", txid * 100)))
    return out


def publish_events(spark, lake: LocalStore, events: list[HdfsEvent]) -> None:
    run_id = new_run_id()
    write_runs(curated_frame(spark, [(e, DAY) for e in events]), lake.root_uri, run_id, "zstd")
    JsonFileCatalog(lake, LOCAL_CATALOG_KEY).publish(
        {(C, DAY): lake.root_uri + run_prefix(EVENTS_PREFIX, C, DAY, run_id)})


def publish_audit(spark, lake: LocalStore, records: list[AuditRecord]) -> None:
    """A new run of the day holding its old rows and the new ones, as the audit compaction
    republishes a partition."""
    catalog = audit_catalog("", "audit", lake)
    old = [r.asDict() for r in read_audit_table(spark, catalog.locations()).collect()]
    rows = old + [{**{c: r.to_json()[c] for c in AUDIT_COLUMNS}, "dt": DAY} for r in records]
    frame = spark.createDataFrame([tuple(r[c] for c in (*AUDIT_COLUMNS, "dt")) for r in rows],
                                  read_audit_table(spark, {}).schema)
    run_id = new_run_id()
    write_audit_runs(frame, lake.root_uri, run_id, "zstd")
    catalog.publish({(C, DAY): lake.root_uri + run_prefix(AUDIT_PREFIX, C, DAY, run_id)})


def run(spark, job, lake: LocalStore, *args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert job.main(["--source", lake.root_uri, "--target", lake.root_uri, *args],
                        spark=spark) == 0
    return json.loads(out.getvalue().strip().splitlines()[-1])


def mass_deletes(spark, lake: LocalStore) -> list[tuple]:
    rows = read_table(spark, lake.root_uri + MASS_DELETES_PREFIX, MASS_DELETE_SCHEMA).collect()
    return sorted((r["scope"], r["subject"], r["window_start"].hour, r["files_removed"],
                   r["user"], r["unattributed_deletes"]) for r in rows)


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> LocalStore:
    return LocalStore(Path(tmp_path_factory.mktemp("rollup_users")) / "lake")


def test_mass_deletes_name_their_users_and_a_late_audit_line_fills_one_exactly_once(spark,
                                                                                      lake):
    publish_events(spark, lake, unlinks(WINDOW_A + WINDOW_B))
    publish_audit(spark, lake, audit_lines(WINDOW_A))
    attributed = run(spark, attribute_events, lake)
    assert attributed["days"] == [f"{C}/{DAY}"] and attributed["rows_written"] == 4
    # No compaction ran here: the attribution run's own mark makes the rollups roll the day up.
    assert rollup_days.pending(lake).days == {DAY}
    first = run(spark, activity_rollups, lake, *ROLLUP_ARGS)
    assert first["days"] == [DAY] and first["marks_cleared"] == 1
    # Window A: zed removed 3 files, amy 1 (most first, not by name); txid 4 has no user.
    # Window B: no audit line yet, so no user and all 3 deletes unattributed. Every path's
    # owner is unknown (no CREATE in the lake): the owner rows are the prefix rows' twins.
    assert mass_deletes(spark, lake) == [
        ("owner", "(unknown)", 10, 5, "zed, amy", 1),
        ("owner", "(unknown)", 11, 3, None, 3),
        ("prefix", "/w/a", 10, 5, "zed, amy", 1),
        ("prefix", "/w/b", 11, 3, None, 3),
    ]

    publish_audit(spark, lake, audit_lines(WINDOW_B))  # bob's lines reach the lake late
    assert run(spark, attribute_events, lake)["rows_written"] == 7
    assert rollup_days.pending(lake).days == {DAY}
    second = run(spark, activity_rollups, lake, *ROLLUP_ARGS)
    assert second["days"] == [DAY] and second["mass_delete_windows"] == 4
    # The day's rows replaced, none added: window B now names bob.
    assert mass_deletes(spark, lake) == [
        ("owner", "(unknown)", 10, 5, "zed, amy", 1),
        ("owner", "(unknown)", 11, 3, "bob", 0),
        ("prefix", "/w/a", 10, 5, "zed, amy", 1),
        ("prefix", "/w/b", 11, 3, "bob", 0),
    ]
    assert rollup_days.pending(lake).days == frozenset()
    assert run(spark, activity_rollups, lake, *ROLLUP_ARGS)["days"] == []
