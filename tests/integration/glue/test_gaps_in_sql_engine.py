"""gaps_daily as Athena would answer it: GAP and SNAPSHOT records of two clusters on several
days, compacted and rolled up by the real jobs into the lake bucket the synthesized dev
Analytics template names, then read by the SQL engine of tests/kit/athena_tables.py over that
template's Glue tables (partition projection emulated). The e2e chain's lake has no GAP, so
this is where `inotify-gaps-last-30-days` is shown to return rows, each checked against
figures computed here from the records written (docs/contract.md: a GAP lost txids
`txid` .. `gap_end_txid - 1`), not from the job's output."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import boto3
import pytest

from glue_jobs import activity_rollups
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.layout import LOCAL_CATALOG_KEY
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.lake_layout import GAPS_TABLE
from stacks.lake_catalog import NAMED_QUERIES
from tests.infra.synth import synthesized
from tests.integration.glue.generated_events import generated_events
from tests.integration.glue.lake import RawLake
from tests.kit.athena_tables import EngineTable, glue_tables, pinned_to, register_lake
from tests.kit.glue_template import pseudo_parameters

pytestmark = pytest.mark.slow

GAPS_QUERY = "inotify-gaps-last-30-days"


def at(day: date, hour: int, minute: int = 0) -> int:
    return int(datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC).timestamp()
               * 1000)


def day_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


def gap(cluster: str, txid: int, end: int, ts: int) -> HdfsEvent:
    return HdfsEvent(cluster, txid, 0, EventType.GAP, "/", timestamp=ts, gap_end_txid=end)


def listing(cluster: str, txid: int, ts: int, files: int) -> list[HdfsEvent]:
    """A SNAPSHOT of /data/s at `txid`: the directory, then its files (one txid, rising
    index, as the agent lists)."""
    def snap(index: int, path: str, inode: INodeType, size: int | None) -> HdfsEvent:
        return HdfsEvent(cluster, txid, index, EventType.SNAPSHOT, path, timestamp=ts,
                         inode_type=inode, owner="etl", group="hadoop", perms="0644",
                         mtime=ts - 60_000, atime=ts - 60_000, size=size)
    return [snap(0, "/data/s", INodeType.DIRECTORY, None)] + [
        snap(i, f"/data/s/part-{i:05d}", INodeType.FILE, 100 * i) for i in range(1, files + 1)]


JAN13, JAN14 = date(2015, 1, 13), date(2015, 1, 14)
# The day the saved query runs: the day after the last record's day.
TODAY = JAN14 + timedelta(days=1)
# Txids of the GAP and SNAPSHOT records lie apart from the generated events' (1000 and up, one
# per event): compaction keeps one record per (cluster, txid, index).
AGENT_RECORDS = [
    # Older than the query's 30 days: in gaps_daily, not in the answer.
    gap("c1", 10, 50, at(date(2014, 12, 10), 10)),
    gap("c1", 1100, 1400, at(JAN13, 20)),
    gap("c2", 1100, 1150, at(JAN13, 5)),
    gap("c1", 1500, 1510, at(JAN14, 3)),
    gap("c1", 1600, 2600, at(JAN14, 22)),
    *listing("c1", 2600, at(JAN14, 22, 5), files=6),
    # A day of SNAPSHOT records only (the listing began after midnight): no gap, no txid range.
    *listing("c2", 1200, at(JAN14, 0, 10), files=3),
]


def expected_rows(records: Sequence[HdfsEvent], since: str) -> list[tuple[Any, ...]]:
    """The query's rows from the records: per (dt, cluster) from `since` on, most recent day
    first, the gaps, txids lost, first and last lost txid and the SNAPSHOT records."""
    days: dict[tuple[str, str], list[HdfsEvent]] = {}
    for e in records:
        assert e.timestamp is not None
        if e.type in (EventType.GAP, EventType.SNAPSHOT) and day_of(e.timestamp) >= since:
            days.setdefault((day_of(e.timestamp), e.cluster), []).append(e)
    rows = []
    for (dt, cluster), found in days.items():
        gaps = [e for e in found if e.type == EventType.GAP]
        ends = [e.gap_end_txid for e in gaps if e.gap_end_txid is not None]
        lost = sum(end - e.txid for e, end in zip(gaps, ends, strict=True))  # every GAP has one
        rows.append((dt, cluster, len(gaps), lost,
                     min((e.txid for e in gaps), default=None),
                     max(ends) - 1 if ends else None,
                     sum(e.type == EventType.SNAPSHOT for e in found)))
    # ORDER BY dt DESC, cluster
    return sorted(sorted(rows, key=lambda r: r[1]), key=lambda r: r[0], reverse=True)


@dataclass(frozen=True)
class Engine:
    spark: Any
    tables: dict[str, EngineTable]


@pytest.fixture(scope="module")
def engine(spark, s3) -> Iterator[Engine]:
    (analytics,) = [t for name, t in synthesized()["dev"].templates().items()
                    if name.endswith("-Analytics")]
    account = boto3.client("sts").get_caller_identity()["Account"]
    tables = glue_tables(analytics, pseudo_parameters(account, s3.meta.region_name))
    # The lake in the bucket the template's tables point at, in moto's account and region.
    (bucket,) = {t.location.split("/")[2] for t in tables.values()}
    lake = RawLake(s3, bucket=bucket)
    # A few events a day (each hour is a raw object the compaction reads; few keep it fast).
    for cluster, seed in (("c1", 7), ("c2", 8)):
        events = generated_events(cluster, count=6, start_ms=at(JAN13, 1),
                                  span_ms=2 * 86_400_000 - 7_200_000, seed=seed)
        lake.write_message(f"events-{cluster}", events, sent_ms=at(JAN14, 23))
        agent = [e for e in AGENT_RECORDS if e.cluster == cluster]
        lake.write_message(f"agent-{cluster}", agent, sent_ms=at(JAN14, 23))

    store = lake.store
    events_catalog = JsonFileCatalog(store, LOCAL_CATALOG_KEY)
    compact(spark, store, store, events_catalog, CompactionSettings())
    # The scheduled run (no --from_dt/--to_dt): the days the compaction marked.
    assert activity_rollups.main(["--source", lake.uri, "--target", lake.uri],
                                 spark=spark) == 0

    registered = register_lake(spark, tables, store=store, bucket=bucket,
                               registered={"events": events_catalog.locations()},
                               now=datetime.now(UTC))
    try:
        yield Engine(spark, registered)
    finally:
        for name in registered:  # the package's session outlives this module
            spark.sql(f"DROP TABLE IF EXISTS `{name}`")


def test_gaps_daily_has_a_row_per_day_and_cluster_with_agent_records(engine: Engine) -> None:
    wrote = {(day_of(e.timestamp), e.cluster) for e in AGENT_RECORDS if e.timestamp is not None}
    # Athena's projected days holding data are the days of those records, and only they.
    assert set(engine.tables[GAPS_TABLE].partitions) == {(dt,) for dt, _ in wrote}
    rows = engine.spark.sql(f"SELECT dt, cluster FROM {GAPS_TABLE}").collect()
    assert sorted(tuple(r) for r in rows) == sorted(wrote)


def test_gaps_of_the_last_30_days_are_the_gaps_written(engine: Engine) -> None:
    since = (TODAY - timedelta(days=30)).isoformat()
    expected = expected_rows(AGENT_RECORDS, since)
    assert any(r[6] and not r[2] for r in expected), "a day of snapshots only is in the answer"
    assert any(day_of(e.timestamp) < since for e in AGENT_RECORDS if e.timestamp is not None)

    rows = engine.spark.sql(pinned_to(NAMED_QUERIES[GAPS_QUERY][1], TODAY)).collect()

    assert [tuple(r) for r in rows] == expected
