"""Every saved Athena query, run by a SQL engine on the lake the chain built: Spark SQL over the
Glue tables of the deployed template (tests/kit/athena_tables.py), each result checked against
figures computed here, in plain Python, from the source events the chain was fed.

Why Spark SQL and not Trino (Athena's engine): Trino releases since 436 need Java 21+ (the
project runs Java 17), the server tarball is ~820 MB from Maven Central (476), and it would need
its Glue metastore pointed at moto; too heavy for the CI budget. The queries keep to the SQL both
engines accept (stacks/lake_catalog.py lists what differs), and Spark parses and runs each one.

The runner's only rewrites: `current_date` becomes the day after the source's last NameNode day
(the data is from fixed days, the clock is not), and history-of-one-path's example path one of
the lake's busiest paths ("edit the path", says the query).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from glue_jobs.activity_rollups import SPEC, settings_from
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.rollup_run import RollupSettings
from glue_jobs.rollups import DISTCP_TEMPORARY, UNKNOWN_OWNER, UPLOAD_SUFFIX
from hdfs_events.event import HdfsEvent
from stacks.lake_catalog import HISTORY_EXAMPLE_PATH, NAMED_QUERIES
from tests.e2e.conftest import MASS_DELETE_THRESHOLD
from tests.kit.athena_tables import EngineTable, glue_tables, pinned_to, register_lake

pytestmark = pytest.mark.slow

MS_PER_DAY = 86_400_000


# --- the rollups, recomputed from the source events (the definitions of docs/glue.md) ----------
@dataclass
class _Known:
    owner: str | None = None
    inode_type: str | None = None

    def learn(self, owner: str | None, inode_type: str | None) -> None:
        self.owner = owner or self.owner
        self.inode_type = inode_type or self.inode_type


@dataclass
class Expected:
    # (dt, cluster, prefix, owner) -> Counter of files_created, files_deleted, files_renamed,
    # bytes_written, small_files
    activity: dict[tuple[str, str, str, str], Counter] = field(default_factory=dict)
    # (cluster, scope, subject, window start ms) -> [unlinks, first txid, last txid]
    mass_deletes: dict[tuple[str, str, str, int], list[int]] = field(default_factory=dict)


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


def _prefix(path: str, depth: int) -> str:
    return "/" + "/".join(path.split("/")[1:-1][:depth])


def _ends_upload(e: HdfsEvent) -> bool:
    """`hdfs dfs -put`'s x._COPYING_ -> x, or DistCp's temporary file into place."""
    return (e.path == f"{e.dst_path}{UPLOAD_SUFFIX}"
            or e.path.rsplit("/", 1)[-1].startswith(DISTCP_TEMPORARY))


def recompute(source: Sequence[HdfsEvent], s: RollupSettings) -> Expected:
    """Owners as the rollups attribute them: the latest CREATE or METADATA OWNER of the path at
    or before the event, or of a rename's source when it was renamed onto the path (one hop:
    what a destination learned from its own rename is not passed on)."""
    direct: dict[tuple[str, str], _Known] = defaultdict(_Known)
    known: dict[tuple[str, str], _Known] = defaultdict(_Known)
    out = Expected()
    window_ms = s.window_minutes * 60_000
    for e in sorted(source, key=lambda e: (e.cluster, e.txid, e.index)):
        t = e.type.value
        if t in ("CREATE", "SNAPSHOT") or (t == "METADATA" and e.metadata_type == "OWNER"):
            for table in (direct, known):
                table[(e.cluster, e.path)].learn(e.owner, e.inode_type)
        if t == "RENAME":
            source_owner = direct[(e.cluster, e.path)]
            if source_owner.owner is not None:
                known[(e.cluster, e.dst_path)].learn(source_owner.owner, source_owner.inode_type)
        if t in ("GAP", "SNAPSHOT") or e.timestamp is None:
            continue  # never activity; without a NameNode time only METADATA and APPEND
        owner = known[(e.cluster, e.path)].owner or UNKNOWN_OWNER
        prefix = _prefix(e.path, s.prefix_depth)
        row = out.activity.setdefault((_day(e.timestamp), e.cluster, prefix, owner), Counter())
        if t == "CREATE" and e.inode_type == "FILE":
            row["files_created"] += 1
        if t == "UNLINK" and known[(e.cluster, e.path)].inode_type != "DIRECTORY":
            row["files_deleted"] += 1
        if t == "RENAME" and not _ends_upload(e):
            row["files_renamed"] += 1
        if t == "CLOSE" and e.size is not None and e.size >= 0:
            row["bytes_written"] += e.size
            row["small_files"] += e.size < s.small_file_bytes
        if t == "UNLINK":
            start = e.timestamp - e.timestamp % window_ms
            for scope, subject in (("owner", owner), ("prefix", prefix)):
                w = out.mass_deletes.setdefault((e.cluster, scope, subject, start),
                                                [0, e.txid, e.txid])
                w[0] += 1
                w[1], w[2] = min(w[1], e.txid), max(w[2], e.txid)
    out.mass_deletes = {k: v for k, v in out.mass_deletes.items() if v[0] >= s.threshold}
    return out


# --- the engine --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Engine:
    spark: Any
    tables: dict[str, EngineTable]
    today: date  # what `current_date` is pinned to
    settings: RollupSettings  # the rollups job's, as the chain ran it
    expected: Expected
    source: list[HdfsEvent]

    def run(self, query_id: str, sql: str | None = None) -> list[Any]:
        sql = NAMED_QUERIES[query_id][1] if sql is None else sql
        return self.spark.sql(pinned_to(sql, self.today)).collect()


@pytest.fixture(scope="module")
def engine(chain_run) -> Iterator[Engine]:
    from glue_jobs.runtime import local_session

    chain = chain_run.chain
    (analytics,) = [t for name, t in chain.templates.items() if name.endswith("-Analytics")]
    account = chain.client("sts").get_caller_identity()["Account"]
    pseudo = {"AWS::AccountId": account, "AWS::Region": chain.client("s3").meta.region_name,
              "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
    events_catalog = JsonFileCatalog(chain_run.lake, LOCAL_CATALOG_KEY)
    spark = local_session("saved-queries", s3a=True)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        tables = register_lake(
            spark, glue_tables(analytics, pseudo), store=chain_run.lake, bucket=chain.bucket,
            registered={"events": events_catalog.locations()}, now=datetime.now(UTC))
        settings = settings_from({a.name: a.default or "" for a in SPEC}
                                 | {"mass_delete_threshold": str(MASS_DELETE_THRESHOLD)})
        last = max(e.timestamp for e in chain_run.source if e.timestamp is not None)
        yield Engine(spark=spark, tables=tables,
                     today=date.fromisoformat(_day(last)) + timedelta(days=1), settings=settings,
                     expected=recompute(chain_run.source, settings), source=chain_run.source)
    finally:
        spark.stop()


def test_every_saved_query_parses_and_resolves_in_the_engine(engine: Engine) -> None:
    # As stored (with current_date): Spark's parser and analyzer accept it over these tables.
    for query_id, (_, sql) in NAMED_QUERIES.items():
        assert engine.spark.sql(sql).columns, query_id
        assert "current_date" not in pinned_to(sql, engine.today).lower()


def test_every_table_has_rows_where_the_catalog_points(engine: Engine, chain_run) -> None:
    """Each rollup table's days, as projected, hold every file the rollups job wrote; events
    has the partitions compaction registered. gaps_daily: only when the source has GAPs."""
    has_gaps = any(e.type.value == "GAP" for e in engine.source)
    for name, table in engine.tables.items():
        rows = engine.spark.sql(f"SELECT count(*) AS n FROM {name}").first()["n"]
        if name == "gaps_daily" and not has_gaps:
            assert rows == 0
            continue
        assert rows > 0, f"{name}: no rows in the engine"
        assert table.partitions, name
    # Nothing the job wrote is outside a projected day (a day Athena would never read).
    for name in ("activity_daily", "mass_deletes", "gaps_daily"):
        table = engine.tables[name]
        prefix = table.table.location.split("/", 3)[3]
        written = {o.key.rsplit("/", 1)[0] + "/" for o in chain_run.lake.list_objects(prefix)
                   if o.key.endswith(".parquet")}
        read = {loc.split("/", 3)[3] for loc in table.partitions.values()}
        assert written == read, name
    # events: as many rows as the source has events (the lake equals the source, e2e).
    events = engine.spark.sql("SELECT count(*) AS n FROM events").first()["n"]
    assert events == len(engine.source)


def test_mass_deletes_yesterday_lists_the_burst(engine: Engine) -> None:
    yesterday = (engine.today - timedelta(days=1)).isoformat()
    window_ms = engine.settings.window_minutes * 60_000
    expected = sorted(
        ((cluster, scope, subject, datetime.fromtimestamp(start / 1000),
          datetime.fromtimestamp((start + window_ms) / 1000), n, first, last)
         for (cluster, scope, subject, start), (n, first, last)
         in engine.expected.mass_deletes.items() if _day(start) == yesterday),
        key=lambda r: (-r[5], r[0], r[1], r[2], r[3]))
    rows = [tuple(r) for r in engine.run("mass-deletes-yesterday")]
    assert expected, "the source has no mass delete on the pinned day: pin another"
    assert rows == expected


def _reported(figures: Counter) -> bool:
    """activity_daily leaves out rows whose figures are all zero (METADATA, APPEND only)."""
    return any(figures.values())


def _last_7_days(engine: Engine) -> dict[tuple[str, str, str], Counter]:
    since = (engine.today - timedelta(days=7)).isoformat()
    out: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for (dt, cluster, prefix, owner), figures in engine.expected.activity.items():
        if dt >= since:
            out[(cluster, prefix, owner)].update(figures)
    return out


def test_top_writers_by_directory_sums_close_sizes_by_prefix_and_owner(engine: Engine) -> None:
    week = _last_7_days(engine)
    expected = sorted(((c, p, o, f["bytes_written"], f["files_created"])
                       for (c, p, o), f in week.items() if _reported(f)),
                      key=lambda r: (-r[3], r[0], r[1], r[2]))[:50]
    rows = [tuple(r) for r in engine.run("top-writers-by-directory")]
    assert len(rows) == min(50, len(expected)) and rows[0][3] > 0
    assert rows == expected


def test_small_files_report_counts_small_closes_by_prefix(engine: Engine) -> None:
    by_prefix: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for (cluster, prefix, _), figures in _last_7_days(engine).items():
        by_prefix[(cluster, prefix)].update(figures)

    def pct(small: int, created: int) -> Decimal | None:
        if not created:
            return None
        return (Decimal(100 * small) / Decimal(created)).quantize(Decimal("0.1"), ROUND_HALF_UP)

    expected = sorted(((c, p, f["small_files"], f["files_created"],
                        pct(f["small_files"], f["files_created"]))
                       for (c, p), f in by_prefix.items() if _reported(f)),
                      key=lambda r: (-r[2], r[0], r[1]))[:50]
    rows = [tuple(r) for r in engine.run("small-files-report")]
    assert any(r[2] > 0 for r in rows)
    assert rows == expected


def test_gaps_of_the_last_30_days_are_the_sources_gaps(engine: Engine) -> None:
    since = (engine.today - timedelta(days=30)).isoformat()
    gaps = [e for e in engine.source if e.type.value == "GAP"
            and e.timestamp is not None and _day(e.timestamp) >= since]
    rows = engine.run("inotify-gaps-last-30-days")
    assert sum(r["gaps"] for r in rows) == len(gaps)
    assert sum(r["lost_txids"] for r in rows) == sum(e.gap_end_txid - e.txid for e in gaps)


def test_history_of_one_path_is_every_event_naming_it_in_order(engine: Engine) -> None:
    # The busiest path that was also a rename's destination: CREATEs, CLOSEs, RENAMEs onto it.
    named = Counter(p for e in engine.source for p in (e.path, e.dst_path) if p)
    renamed_onto = {e.dst_path for e in engine.source if e.dst_path}
    path = max(sorted(renamed_onto), key=lambda p: named[p])
    sql = NAMED_QUERIES["history-of-one-path"][1]
    assert sql.count(f"'{HISTORY_EXAMPLE_PATH}'") == 2
    rows = [tuple(r) for r in engine.run(
        "history-of-one-path", sql.replace(f"'{HISTORY_EXAMPLE_PATH}'", f"'{path}'"))]
    expected = [(e.cluster, e.txid, e.index, e.type.value, e.path, e.dst_path, e.timestamp,
                 e.size, e.owner, e.perms)
                for e in sorted(engine.source, key=lambda e: (e.cluster, e.txid, e.index))
                if path in (e.path, e.dst_path)]
    assert len(expected) >= 3
    assert rows == expected
