"""compact_audit on the package's local SparkSession over audit objects as the agent writes them
(onprem_agent.audit.shipper.build_object over lines Hadoop 3.3.4's NameNode wrote, and lines in
its layout) in the moto server's S3, read and published through S3A: the table equals the parsed
lines, exactly once per line identity, bad lines and foreign records quarantined with their
reason, a damaged object set apart whole, a failed run publishing nothing, and the saved query
"denied-accesses-under-a-path" answered by Spark SQL over the compacted table."""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from glue_jobs import compact_audit as job
from glue_jobs.audit_compaction import (
    AuditCompactionReport,
    AuditCompactionSettings,
    compact_audit,
)
from glue_jobs.audit_io import read_audit_table
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.layout import AUDIT_LOCAL_CATALOG_KEY, QUARANTINE_AUDIT_PREFIX
from hdfs_events.audit import AuditRecord, TimeFormat
from hdfs_events.lake_layout import AUDIT_PREFIX, AUDIT_TABLE, audit_object_key
from onprem_agent.audit.logfiles import Chunk
from onprem_agent.audit.shipper import build_object
from tests.integration.glue.lake import RawLake

pytestmark = pytest.mark.slow

# What the kit's NameNode (Hadoop 3.3.4, log4j layout `%d{ISO8601} %p %c{2}: %m%n`) wrote to its
# audit log: root, alice and bob; alice denied a create in bob's 0700 directory.
NAMENODE_LOG = (Path(__file__).parents[2] / "unit" / "contract" / "data"
                / "hdfs-audit.log").read_text()
FILE_ID = "2049-131077"  # <device>-<inode> of the log file, as the tailer names it
HOST = "nn1.example.com"


def audit_line(at: datetime, user: str, cmd: str, src: str, dst: str | None = None, *,
               allowed: bool = True, ip: str = "10.1.2.3") -> str:
    """A line in the form FSNamesystem's default audit logger writes (hdfs_events/audit.py)."""
    perm = f"{user}:hadoop:rw-r--r--" if allowed and cmd in ("create", "mkdirs") else "null"
    return (f"{at:%Y-%m-%d %H:%M:%S},{at.microsecond // 1000:03d} INFO FSNamesystem.audit: "
            f"allowed={str(allowed).lower()}\tugi={user} (auth:KERBEROS)\tip=/{ip}\t"
            f"cmd={cmd}\tsrc={src}\tdst={dst or 'null'}\tperm={perm}\tproto=rpc")


def with_offsets(lines: Iterable[str], start: int = 0) -> list[tuple[int, bytes]]:
    """(offset of the first byte, line) of lines written one after the other from `start`."""
    out, offset = [], start
    for line in lines:
        data = line.encode()
        out.append((offset, data))
        offset += len(data) + 1
    return out


def ship(lake: RawLake, lines: Sequence[tuple[int, bytes]], *, cluster: str = "c1",
         host: str = HOST, file_id: str = FILE_ID) -> tuple[str, list[AuditRecord]]:
    """One object of the agent's (every line shipped: read_paths "/"); (key, its records)."""
    end = lines[-1][0] + len(lines[-1][1]) + 1
    obj = build_object(cluster, host, Chunk(file_id, list(lines), end), read_paths=("/",),
                       time_format=TimeFormat(), now_ms=lambda: 0)
    assert obj.key is not None
    lake.s3.put_object(Bucket=lake.bucket, Key=obj.key, Body=obj.body)
    return obj.key, list(obj.records)


def put_lines(lake: RawLake, key: str, records: Iterable[dict[str, Any] | str]) -> None:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    lake.s3.put_object(Bucket=lake.bucket, Key=key, Body=gzip.compress(text.encode(), mtime=0))


def catalog(lake: RawLake) -> JsonFileCatalog:
    return JsonFileCatalog(lake.store, AUDIT_LOCAL_CATALOG_KEY, AUDIT_TABLE)


def run(spark, lake: RawLake, **overrides: Any) -> AuditCompactionReport:
    settings = dataclasses.replace(AuditCompactionSettings(), **overrides)
    return compact_audit(spark, lake.store, lake.store, catalog(lake), settings)


def day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


def row_of(record: AuditRecord) -> dict[str, Any]:
    """What the table holds of a parsed record: its fields less raw/reason, plus its UTC day."""
    row = record.to_json()
    assert row.pop("reason") is None and row.pop("raw") is None
    return row | {"dt": day(record.time)}


def table(spark, lake: RawLake) -> list[dict[str, Any]]:
    rows = [r.asDict() for r in read_audit_table(spark, catalog(lake).locations()).collect()]
    return sorted(rows, key=lambda r: (r["cluster"], r["host"], r["file_id"], r["offset"]))


def expected(records: Iterable[AuditRecord]) -> list[dict[str, Any]]:
    unique = {r.identity: row_of(r) for r in records}
    return [unique[k] for k in sorted(unique)]


def quarantined(spark, lake: RawLake) -> dict[str, str]:
    """{line: reason} of the lines the runs set apart."""
    rows = spark.read.json(lake.spark_uri(f"{QUARANTINE_AUDIT_PREFIX}lines/")).collect()
    return {r["line"]: r["reason"] for r in rows}


def test_shipped_namenode_lines_compact_to_exactly_their_records(spark, lake: RawLake,
                                                                 capsys) -> None:
    log = with_offsets(NAMENODE_LOG.splitlines())
    _, first = ship(lake, log[:9])
    _, rest = ship(lake, log[9:])
    # A second NameNode (HA) whose lines straddle UTC midnight: two days of the table.
    late = datetime(2026, 11, 26, 23, 59, 59, 250000, tzinfo=UTC)
    _, standby = ship(lake, with_offsets([
        audit_line(late, "carol", "delete", "/data/old"),
        audit_line(late + timedelta(seconds=1), "carol", "mkdirs", "/data/new")]),
        host="nn2.example.com", file_id="2049-77")

    assert job.main(["--source", lake.uri, "--target", lake.uri], spark=spark) == 0

    report = json.loads(capsys.readouterr().out)
    shipped = [*first, *rest, *standby]  # not datanodeReport: a read of no path
    assert len(shipped) == len(log) + 1
    assert (report["records_added"], report["quarantined_lines"]) == (len(shipped), 0)
    assert table(spark, lake) == expected(shipped)
    assert set(catalog(lake).locations()) == {("c1", "2026-11-26"), ("c1", "2026-11-27")}
    assert all(k.endswith(".zstd.parquet") for k in lake.keys(AUDIT_PREFIX)
               if k.endswith(".parquet"))


def test_a_resent_object_and_later_runs_publish_each_line_once(spark, lake: RawLake) -> None:
    log = with_offsets(NAMENODE_LOG.splitlines())
    key, first = ship(lake, log[:10])
    assert run(spark, lake).records_added == len(first)
    published = catalog(lake).locations()

    # A crash before the position was saved: the same lines and more, from the same offset, so
    # the same key; and lines from an older saved position (5) in an object of their own.
    resent_key, resent = ship(lake, log)
    _, older = ship(lake, log[5:])
    assert resent_key == key

    second = run(spark, lake)
    new = len(resent) - len(first)
    assert new == 6
    assert (second.records_added, second.duplicates_dropped) == (
        new, len(resent) + len(older) - new)
    assert table(spark, lake) == expected([*resent, *older])
    assert catalog(lake).locations() != published

    third = run(spark, lake)
    assert (third.objects_read, third.records_added) == (0, 0)
    assert len(table(spark, lake)) == len(resent)


def test_bad_lines_and_records_of_another_cluster_are_quarantined_with_their_reason(
        spark, lake: RawLake) -> None:
    at = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
    lines = with_offsets([
        audit_line(at, "alice", "create", "/user/alice/a"),
        "2026-11-26 10:00:01,000 INFO FSNamesystem.audit: ugi=alice (auth:SIMPLE)",
        audit_line(at + timedelta(seconds=2), "bob", "delete", "/user/bob/b"),
    ])
    _, agent = ship(lake, lines)
    good = [r for r in agent if r.reason is None]
    unparsed = [r for r in agent if r.reason is not None]
    assert len(good) == 2 and len(unparsed) == 1

    # Lines of records that break the table's rules, in an object of c1's prefix.
    template = good[0].to_json()
    broken = {
        "negative offset": template | {"offset": -7},
        "no host": template | {"host": None, "offset": 900},
        "no time": template | {"time": None, "offset": 1000},
        "foreign": template | {"cluster": "c2", "offset": 1100},
    }
    key = audit_object_key("c1", template["time"], HOST, "2049-9", 0)
    put_lines(lake, key, [*broken.values(), "[1, 2, 3]", "{\"cluster\": \"c1\", \"offset\": \"x\"}",
                          template | {"file_id": "2049-9", "offset": 1200}])

    report = run(spark, lake)

    assert (report.records_added, report.quarantined_lines) == (3, 7)
    assert table(spark, lake) == expected([*good, dataclasses.replace(
        good[0], file_id="2049-9", offset=1200)])
    reasons = quarantined(spark, lake)
    as_shipped = json.dumps(unparsed[0].to_json(), separators=(",", ":"), ensure_ascii=False)
    assert reasons[as_shipped] == f"line not parsed by the agent: {unparsed[0].reason}"
    by_case = {name: reasons[json.dumps(line)] for name, line in broken.items()}
    assert by_case == {
        "negative offset": "offset: -7 is negative (a byte offset in the audit log file)",
        "no host": "host: null (part of the line's identity (cluster, host, file_id, offset))",
        "no time": "time: null (a parsed line has its time; the table files it by its UTC day)",
        "foreign": "cluster: c2 in an object under raw-audit/cluster=c1/ (a cluster's records "
                   "are accepted only from its own prefix)",
    }
    assert reasons["[1, 2, 3]"].startswith("line: not a JSON object")
    assert reasons['{"cluster": "c1", "offset": "x"}'].startswith("line: not a JSON object")


def test_a_damaged_object_is_set_apart_whole_and_the_others_published(spark,
                                                                     lake: RawLake) -> None:
    log = with_offsets(NAMENODE_LOG.splitlines())
    _, good = ship(lake, log[:8])
    damaged_key, _ = ship(lake, log[8:], file_id="2049-8")
    body = lake.read(damaged_key)
    lake.s3.put_object(Bucket=lake.bucket, Key=damaged_key, Body=body[:len(body) // 2])

    report = run(spark, lake)

    assert (report.records_added, report.quarantined_objects) == (len(good), 1)
    assert table(spark, lake) == expected(good)
    (reason_key,) = [k for k in lake.keys(QUARANTINE_AUDIT_PREFIX) if k.endswith(".reason.txt")]
    assert reason_key.endswith(damaged_key + ".reason.txt")
    assert "gzip" in lake.read(reason_key).decode()
    assert lake.read(reason_key.removesuffix(".reason.txt")) == body[:len(body) // 2]
    assert run(spark, lake).objects_read == 0  # the watermark holds its outcome


def test_a_failed_run_publishes_nothing_and_the_next_publishes_each_line_once(
        spark, lake: RawLake) -> None:
    log = with_offsets(NAMENODE_LOG.splitlines())
    _, records = ship(lake, log)

    with pytest.raises(Exception, match=r"(?i)codec|compression"):
        run(spark, lake, compression="no-such-codec")  # the write fails mid-run

    assert catalog(lake).locations() == {}
    report = run(spark, lake)
    assert report.records_added == len(records)
    assert table(spark, lake) == expected(records)


# --- the saved query ---------------------------------------------------------------------------

TODAY = date(2026, 11, 27)  # what the query's current_date is pinned to


def test_denied_accesses_under_a_path_answers_from_the_compacted_table(spark,
                                                                       lake: RawLake) -> None:
    from stacks.lake_catalog import (
        DENIED_EXAMPLE_PATH,
        NAMED_QUERIES,
        audit_columns,
        event_partition_keys,
    )
    from tests.kit.athena_tables import GlueTable, pinned_to, register

    base = DENIED_EXAMPLE_PATH
    t = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    week_ago = t - timedelta(days=9)  # outside the query's 7 days
    lines = [
        audit_line(t, "alice", "create", f"{base}/x", allowed=False),
        audit_line(t + timedelta(minutes=1), "alice", "create", f"{base}/y", allowed=False),
        audit_line(t + timedelta(minutes=2), "alice", "create", f"{base}/y", allowed=False),
        audit_line(t + timedelta(minutes=3), "alice", "open", f"{base}/x", allowed=False),
        audit_line(t + timedelta(minutes=4), "mallory", "delete", base, allowed=False),
        # A rename of another directory's file into the path, denied: matched by dst.
        audit_line(t + timedelta(minutes=5), "mallory", "rename", "/tmp/z", f"{base}/z",
                   allowed=False),
        # Not denied, not under the path (a sibling sharing its first letters), too old.
        audit_line(t + timedelta(minutes=6), "bob", "create", f"{base}/ok"),
        audit_line(t + timedelta(minutes=7), "alice", "create", f"{base}by/x", allowed=False),
        audit_line(week_ago, "alice", "create", f"{base}/old", allowed=False),
    ]
    _, records = ship(lake, with_offsets(lines[:-1]))
    _, old = ship(lake, with_offsets(lines[-1:], start=10_000))
    # Another cluster's denial under the same path, from its own prefix.
    _, other = ship(lake, with_offsets([audit_line(t, "alice", "create", f"{base}/x",
                                                   allowed=False)]), cluster="c2")
    run(spark, lake)

    audit = GlueTable(
        name=AUDIT_TABLE, columns=tuple((c.name, c.type.input_string) for c in audit_columns()),
        partition_keys=tuple((c.name, c.type.input_string) for c in event_partition_keys()),
        location=lake.uri + "/" + AUDIT_PREFIX, parameters={})
    register(spark, audit, catalog(lake).locations())
    try:
        rows = spark.sql(pinned_to(NAMED_QUERIES["denied-accesses-under-a-path"][1],
                                   TODAY)).collect()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS `{AUDIT_TABLE}`")  # the package's session goes on

    since = (TODAY - timedelta(days=7)).isoformat()

    def under(path: str | None) -> bool:
        return path is not None and (path == base or path.startswith(base + "/"))

    groups: dict[tuple[str, str, str], list[AuditRecord]] = defaultdict(list)
    for r in [*records, *old, *other]:
        if r.allowed is False and day(r.time) >= since and (under(r.src) or under(r.dst)):
            groups[(r.cluster, r.user, r.cmd)].append(r)
    want = sorted(((c, u, cmd, len(rs), len({r.src for r in rs}), min(r.time for r in rs),
                    max(r.time for r in rs)) for (c, u, cmd), rs in groups.items()),
                  key=lambda w: (-w[3], w[0], w[1], w[2]))
    assert want[0][:4] == ("c1", "alice", "create", 3)  # the trap lines are left out
    assert [tuple(r) for r in rows] == want


# --- the exactly-once transforms on small frames ------------------------------------------------

def test_first_copies_keeps_one_row_per_identity_and_not_published_drops_published_ones(
        spark) -> None:
    from pyspark.sql import types as T

    from glue_jobs.audit_lines import first_copies, not_published

    schema = T.StructType([T.StructField(n, t) for n, t in (
        ("object", T.StringType()), ("cluster", T.StringType()), ("host", T.StringType()),
        ("file_id", T.StringType()), ("offset", T.LongType()), ("user", T.StringType()))])
    rows = spark.createDataFrame([
        ("raw-audit/b", "c1", "nn1", "f", 5, "from b"),
        ("raw-audit/a", "c1", "nn1", "f", 5, "from a"),
        ("raw-audit/a", "c1", "nn1", "f", 6, "six"),
        ("raw-audit/a", "c1", "nn2", "f", 5, "other host"),
        ("raw-audit/a", "c2", "nn1", "f", 5, "other cluster"),
    ], schema)
    published = spark.createDataFrame([("raw-audit/z", "c1", "nn1", "f", 6, "six")], schema)

    kept = rows.transform(first_copies)
    new = kept.transform(not_published(published))

    assert kept.columns == rows.columns
    assert sorted(r["user"] for r in kept.collect()) == [
        "from a", "other cluster", "other host", "six"]
    assert sorted(r["user"] for r in new.collect()) == ["from a", "other cluster", "other host"]
