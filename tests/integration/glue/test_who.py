"""`hdfs-events who` against the moto server's Athena, answered by Spark SQL over a small lake
(tests/kit/athena_on_spark.py): curated events and attribution rows as the attribution job
writes them (glue_jobs.attribution.ATTRIBUTION_SCHEMA). The transform that makes them from
audit lines has its own tests (test_attribution_transforms.py, test_attribution_job.py); run
here it was over 40 s of this module's 100 s."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from glue_jobs.attribution import ATTRIBUTION_SCHEMA
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events_cli.cli import main
from tests.integration.glue.frames import curated_frame
from tests.kit import athena_on_spark

C = "c1"
WORKGROUP = "hdfs-events-test"
# Yesterday 08:00 UTC: inside `--since 7d`; OLD is outside it.
T0 = int((datetime.now(UTC).replace(hour=8, minute=0, second=0, microsecond=0)
          - timedelta(days=1)).timestamp() * 1000)
OLD = T0 - 10 * 86_400_000
QUOTED = "/d/it's"
MANY = 1001  # one more than a GetQueryResults page holds (1000 rows, the header row first)


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _event(txid: int, ms: int, type_: EventType, path: str, dst: str | None = None,
           **fields: object) -> tuple[HdfsEvent, str]:
    return HdfsEvent(cluster=C, txid=txid, index=0, type=type_, path=path, dst_path=dst,
                     timestamp=ms, **fields), _day(ms)  # type: ignore[arg-type]


def _create(txid: int, ms: int, path: str) -> tuple[HdfsEvent, str]:
    return _event(txid, ms, EventType.CREATE, path, ctime=ms, inode_type=INodeType.FILE,
                  owner="hdfs", group="g", perms="0644")


def _who(txid: int, user: str, auth: str, ip: str, real_user: str | None = None) -> dict:
    return {"cluster": C, "txid": txid, "index": 0, "user": user, "auth": auth,
            "real_user": real_user or user, "client_ip": ip, "caller_context": None,
            "audit_host": "nn1", "audit_file_id": "f1", "audit_offset": txid}


EVENTS = [
    _create(1, OLD, "/d/b"),  # before --since 7d
    _create(10, T0, "/d/a"),
    _event(11, T0 + 10, EventType.CLOSE, "/d/a", size=5),
    _event(12, T0 + 20, EventType.RENAME, "/d/a", "/d/b"),
    _event(13, T0 + 30, EventType.METADATA, "/d/b", metadata_type=None),  # no audit line
    _create(14, T0 + 40, QUOTED),
]
UNAUDITED = [_event(100 + i, T0 + 100 + i, EventType.APPEND, "/d/many") for i in range(MANY)]
# Event 13 (METADATA) and the old CREATE have no row: no audit line made them certain.
ATTRIBUTION = [_who(10, "alice", "SIMPLE", "10.0.0.1"), _who(11, "alice", "SIMPLE", "10.0.0.1"),
               _who(12, "bob", "KERBEROS", "10.0.0.2", real_user="etl"),
               _who(14, "dave", "SIMPLE", "10.0.0.4")]


@pytest.fixture(scope="module")
def lake(spark):
    events = curated_frame(spark, [*EVENTS, *UNAUDITED]).localCheckpoint()
    attribution = spark.createDataFrame(ATTRIBUTION, ATTRIBUTION_SCHEMA).localCheckpoint()
    athena_on_spark.apply(spark)
    boto3.client("athena").create_work_group(Name=WORKGROUP)
    return events, attribution


@pytest.fixture
def who(spark, lake, capsys, monkeypatch):
    events, attribution = lake
    events.createOrReplaceTempView("events")
    attribution.createOrReplaceTempView("attribution")
    monkeypatch.setenv("ATHENA_WORKGROUP", WORKGROUP)
    monkeypatch.setenv("GLUE_DATABASE", "hdfs_events_test")

    def run(*argv: str) -> tuple[int, list[str], str]:
        code = main(["who", *argv])
        out, err = capsys.readouterr()
        return code, out.splitlines(), err
    return run


def test_who_names_each_change_of_the_path_since_the_day_asked(who) -> None:
    code, lines, _ = who("/d/b", "--since", "7d", "--cluster", C)
    assert code == 0
    assert lines == [
        f"{_stamp(T0 + 20)}  RENAME    /d/a -> /d/b  bob (via etl)  KERBEROS  10.0.0.2",
        f"{_stamp(T0 + 30)}  METADATA  /d/b  (unknown)  -  -",
    ]
    code, lines, _ = who("/d/b", "--since", _day(OLD))
    assert code == 0 and len(lines) == 3
    assert lines[0] == f"{_stamp(OLD)}  [{C}]  CREATE    /d/b  (unknown)  -  -"


def test_a_rename_is_shown_from_both_ends(who) -> None:
    code, lines, _ = who("/d/a", "--since", "2d")
    assert code == 0
    assert [re.split(r"  +", line)[2:5] for line in lines] == [
        ["CREATE", "/d/a", "alice"], ["CLOSE", "/d/a", "alice"],
        ["RENAME", "/d/a -> /d/b", "bob (via etl)"]]


def test_a_quote_in_the_path_is_a_parameter_not_sql(who) -> None:
    code, lines, _ = who(QUOTED, "--since", "7d")
    assert code == 0
    assert lines == [f"{_stamp(T0 + 40)}  [{C}]  CREATE    {QUOTED}  dave  SIMPLE  10.0.0.4"]
    # Spliced into the SQL text, this path would match every event.
    injected = "/d/x' OR e.path LIKE '%"
    code, lines, _ = who(injected, "--since", "30d")
    assert code == 0 and len(lines) == 1
    assert lines[0].startswith(f"no change of {injected} since ")


def test_no_change_since_is_said_and_exits_0(who) -> None:
    code, lines, _ = who("/d/b", "--since", "2026-01-01T00:00", "--cluster", "other")
    assert (code, lines) == (0, ["no change of /d/b since 2026-01-01 00:00:00Z"])


def test_every_page_of_results_is_read(who) -> None:
    code, lines, _ = who("/d/many", "--since", "7d", "--cluster", C)
    assert code == 0
    assert len(lines) == MANY
    assert all("APPEND    /d/many  (unknown)" in line for line in lines)


def test_a_failed_query_exits_1_with_athenas_reason(who, spark) -> None:
    spark.catalog.dropTempView("attribution")
    code, lines, err = who("/d/b")
    assert code == 1 and lines == []
    assert "FAILED" in err and "attribution" in err


def test_bad_since_is_refused_naming_the_flag(who) -> None:
    code, _, err = who("/d/b", "--since", "last tuesday")
    assert code == 2 and "--since 'last tuesday'" in err
