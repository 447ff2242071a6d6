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

import re
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
    # bytes_written, small_files, files_overwritten, bytes_replaced, bytes_deleted,
    # bytes_truncated
    activity: dict[tuple[str, str, str, str], Counter] = field(default_factory=dict)
    # (cluster, scope, subject, window start ms) -> MassDelete
    mass_deletes: dict[tuple[str, str, str, int], MassDelete] = field(default_factory=dict)


@dataclass
class MassDelete:
    unlinks: int = 0
    trash_moves: int = 0
    files: int = 0
    bytes: int = 0
    first_txid: int = 0
    last_txid: int = 0
    root: tuple[int, int, str] = (-1, 0, "")  # (files, -txid, path) of its biggest delete

    def add(self, e: HdfsEvent, files: int, size: int) -> None:
        self.unlinks += e.type.value == "UNLINK"
        self.trash_moves += e.type.value == "RENAME"
        self.files, self.bytes = self.files + files, self.bytes + size
        self.first_txid = min(self.first_txid or e.txid, e.txid)
        self.last_txid = max(self.last_txid, e.txid)
        self.root = max(self.root, (files, -e.txid, e.path))


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


def _prefix(path: str, depth: int) -> str:
    return "/" + "/".join(path.split("/")[1:-1][:depth])


def _ends_upload(e: HdfsEvent) -> bool:
    """`hdfs dfs -put`'s x._COPYING_ -> x, or DistCp's temporary file into place."""
    return (e.path == f"{e.dst_path}{UPLOAD_SUFFIX}"
            or e.path.rsplit("/", 1)[-1].startswith(DISTCP_TEMPORARY))


class _Namespace:
    """The files of one cluster as the events leave them: path -> [size (None: unknown),
    created and not closed since], and the directories (made, or holding a file once)."""

    def __init__(self) -> None:
        self.files: dict[str, list] = {}
        self.dirs: set[str] = set()

    def _parents(self, path: str) -> None:
        while (path := path.rsplit("/", 1)[0]):
            self.dirs.add(path)

    def put(self, path: str, size: int | None, fresh: bool) -> None:
        self.files[path] = [size, fresh]
        self.dirs.discard(path)
        self._parents(path)

    def mkdir(self, path: str) -> None:
        self.files.pop(path, None)
        self.dirs.add(path)
        self._parents(path)

    def take(self, path: str) -> tuple[dict[str, list], set[str]] | None:
        """Removes `path` and all below it: (files, dirs) by their names relative to it, None
        when nothing was there."""
        if path in self.files:
            return {"": self.files.pop(path)}, set()
        if path not in self.dirs:
            return None
        below = path + "/"
        files = {p[len(path):]: self.files.pop(p) for p in
                 [p for p in self.files if p.startswith(below)]}
        dirs = {d[len(path):] for d in self.dirs if d == path or d.startswith(below)}
        self.dirs -= {path + d for d in dirs}
        return files, dirs

    def place(self, path: str, taken: tuple[dict[str, list], set[str]]) -> None:
        files, dirs = taken
        for d in dirs:
            self.dirs.add(path + d)
        for rel, f in files.items():
            self.put(path + rel, *f)
        self._parents(path)


def _sizes(taken: tuple[dict[str, list], set[str]]) -> tuple[int, int]:
    files = taken[0]
    return len(files), sum(f[0] or 0 for f in files.values())


def recompute(source: Sequence[HdfsEvent], s: RollupSettings) -> Expected:
    """Owners as the rollups attribute them: the latest CREATE or METADATA OWNER of the path at
    or before the event, or of a rename's source when it was renamed onto the path (one hop:
    what a destination learned from its own rename is not passed on). Files and sizes as
    docs/glue.md defines the figures: a CLOSE writes its growth, an overwrite replaces, an
    UNLINK or a move into the trash deletes every file below it, an expunge nothing."""
    direct: dict[tuple[str, str], _Known] = defaultdict(_Known)
    known: dict[tuple[str, str], _Known] = defaultdict(_Known)
    spaces: dict[str, _Namespace] = defaultdict(_Namespace)
    trash = re.compile(s.trash_pattern)
    out = Expected()
    window_ms = s.window_minutes * 60_000
    for e in sorted(source, key=lambda e: (e.cluster, e.txid, e.index)):
        t, ns = e.type.value, spaces[e.cluster]
        if t in ("CREATE", "SNAPSHOT") or (t == "METADATA" and e.metadata_type == "OWNER"):
            for table in (direct, known):
                table[(e.cluster, e.path)].learn(e.owner, e.inode_type)
        if t == "RENAME":
            source_owner = direct[(e.cluster, e.path)]
            if source_owner.owner is not None:
                known[(e.cluster, e.dst_path)].learn(source_owner.owner, source_owner.inode_type)
        figures: Counter = Counter()
        size = e.size if e.size is not None and e.size >= 0 else None
        deleted: tuple[int, int] | None = None
        old = ns.files.get(e.path)
        if t == "CREATE" and e.inode_type == "FILE":
            over = bool(e.overwrite) and old is not None
            figures["files_overwritten" if over else "files_created"] += 1
            figures["bytes_replaced"] += (old[0] or 0) if over and old else 0
            ns.put(e.path, 0, True)
        elif t in ("CREATE", "SNAPSHOT") and e.inode_type == "DIRECTORY":
            ns.mkdir(e.path)
        elif t == "SNAPSHOT" and e.inode_type == "FILE":
            ns.put(e.path, size, False)
        elif t == "CLOSE":
            if size is not None and old is not None and old[0] is not None:
                figures["bytes_written"] += max(size - old[0], 0)
            if size is not None and old is not None and old[1]:
                figures["small_files"] += size < s.small_file_bytes
            ns.put(e.path, size, False)
        elif t == "TRUNCATE":
            if size is not None and old is not None and old[0] is not None:
                figures["bytes_truncated"] += max(old[0] - size, 0)
            ns.put(e.path, size, False)
        elif t == "UNLINK":
            taken = ns.take(e.path)
            if not trash.search(e.path):
                deleted = _sizes(taken) if taken else None
        elif t == "RENAME":
            from_trash, to_trash = bool(trash.search(e.path)), bool(trash.search(e.dst_path))
            onto = None if from_trash or to_trash else ns.files.get(e.dst_path)
            taken = ns.take(e.path)
            ns.take(e.dst_path)
            if taken:
                ns.place(e.dst_path, taken)
            if to_trash and not from_trash:
                deleted = _sizes(taken) if taken else None
            elif not (from_trash or to_trash):
                figures["files_renamed"] += not _ends_upload(e)
                if onto is not None:
                    figures["files_overwritten"] += 1
                    figures["bytes_replaced"] += onto[0] or 0
        deletes = (t == "UNLINK" and not trash.search(e.path)) or (
            t == "RENAME" and bool(trash.search(e.dst_path)) and not trash.search(e.path))
        if deletes and deleted is None:  # nothing known there: a file, unless a directory
            deleted = (0 if known[(e.cluster, e.path)].inode_type == "DIRECTORY" else 1, 0)
        if deleted is not None:
            figures["files_deleted"] += deleted[0]
            figures["bytes_deleted"] += deleted[1]
        if t in ("GAP", "SNAPSHOT") or e.timestamp is None:
            continue  # never activity; without a NameNode time only METADATA and APPEND
        owner = known[(e.cluster, e.path)].owner or UNKNOWN_OWNER
        prefix = _prefix(e.path, s.prefix_depth)
        out.activity.setdefault((_day(e.timestamp), e.cluster, prefix, owner),
                                Counter()).update(figures)
        if deletes and deleted is not None:
            start = e.timestamp - e.timestamp % window_ms
            for scope, subject in (("owner", owner), ("prefix", prefix)):
                out.mass_deletes.setdefault((e.cluster, scope, subject, start),
                                            MassDelete()).add(e, *deleted)
    out.mass_deletes = {k: v for k, v in out.mass_deletes.items()
                        if v.files >= s.threshold or v.bytes >= s.bytes_threshold}
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
    has the partitions compaction registered. gaps_daily: only when the source has GAPs. The
    tables of jobs the chain does not run (the audit log's) are only parsed, above."""
    has_gaps = any(e.type.value == "GAP" for e in engine.source)
    for name in ("events", "activity_daily", "mass_deletes", "gaps_daily"):
        table = engine.tables[name]
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
          datetime.fromtimestamp((start + window_ms) / 1000), w.files, w.bytes, w.unlinks,
          # no audit log in this chain: no user, every delete unattributed
          w.trash_moves, w.root[2], None, w.unlinks + w.trash_moves, w.first_txid,
          w.last_txid)
         for (cluster, scope, subject, start), w in engine.expected.mass_deletes.items()
         if _day(start) == yesterday),
        key=lambda r: (-r[5], -r[6], r[0], r[1], r[2], r[3]))
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
    # user: null, the chain ships no audit log for the attribution to match.
    expected = [(e.cluster, e.txid, e.index, e.type.value, e.path, e.dst_path, e.timestamp,
                 e.size, e.owner, e.perms, None)
                for e in sorted(engine.source, key=lambda e: (e.cluster, e.txid, e.index))
                if path in (e.path, e.dst_path)]
    assert len(expected) >= 3
    assert rows == expected
