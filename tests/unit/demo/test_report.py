"""The demo's report: the lake is compared with the source on every field, and the report says
where its events came from (live or replayed)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from demo.lake import attribution_problems, lake_differences, named_mass_delete
from demo.report import DemoReport, text_summary, write_html
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType


def source() -> list[HdfsEvent]:
    return [HdfsEvent("demo", 5, 0, EventType.CREATE, "/data/a", timestamp=1, ctime=1,
                      inode_type=INodeType.FILE, owner="etl", group="ml", perms="0644",
                      replication=1, overwrite=False, block_size=134217728),
            HdfsEvent("demo", 6, 0, EventType.METADATA, "/data/a",
                      metadata_type=MetadataType.OWNER, owner="bob", group=None)]


def test_an_equal_lake_has_no_differences():
    assert lake_differences([e.to_dict() for e in source()], source()) == []


def test_a_field_other_than_key_and_type_that_differs_is_named():
    rows = [e.to_dict() for e in source()]
    rows[1]["owner"] = "alice"
    rows[0]["perms"] = "0600"
    assert lake_differences(rows, source()) == [
        "txid 5 index 0: perms '0600' != '0644'", "txid 6 index 0: owner 'alice' != 'bob'"]


def test_missing_extra_and_twice_written_events_are_named():
    rows = [source()[0].to_dict(), source()[0].to_dict(),
            HdfsEvent("demo", 7, 0, EventType.UNLINK, "/x").to_dict()]
    assert lake_differences(rows, source()) == [
        "1 (cluster, txid, index) keys appear twice in the lake",
        "txid 6 index 0: missing from the lake", "txid 7 index 0: in the lake, not in the source"]


def test_the_report_says_what_was_live_and_what_was_replayed(tmp_path: Path):
    report = DemoReport(
        source_events=2, events_by_type={"CREATE": 1}, lake_rows=2, raw_rows=2, quarantined=0,
        quarantine_reasons=[], lag_ms=[5.0], activity=[], top_dirs_by_bytes=[],
        mass_deletes=[], log_lines=[], source_name="Hadoop's DFSInotifyEventInputStream",
        provenance=["Events came from a live NameNode at hdfs://localhost:1: 2 events",
                    "Replayed (backfill): txids 1..5"],
        lake_differences=["txid 6 index 0: owner 'alice' != 'bob'"])
    text = text_summary(report)
    assert "Events came from a live NameNode at hdfs://localhost:1: 2 events" in text
    assert "Replayed (backfill): txids 1..5" in text
    assert "owner 'alice' != 'bob'" in text
    page = write_html(report, tmp_path).read_text()
    assert "<li>Events came from a live NameNode at hdfs://localhost:1: 2 events</li>" in page
    assert "Hadoop&#x27;s DFSInotifyEventInputStream" in page
    assert "owner &#x27;alice&#x27; != &#x27;bob&#x27;" in page


def unlink(txid: int, path: str) -> dict:
    return {"cluster": "demo", "txid": txid, "index": 0, "type": "UNLINK", "path": path,
            "dst_path": None}


WINDOW = {"cluster": "demo", "scope": "prefix", "subject": "/data/ml",
          "window_start": datetime(2026, 11, 26, 10, 0), "window_end": datetime(2026, 11, 26, 10, 10),
          "first_txid": 10, "last_txid": 13, "files_removed": 3}
EVENTS = [unlink(10, "/data/ml/dt=1/a"), unlink(11, "/data/ml/dt=1/b"),
          unlink(12, "/data/other/c"),  # in the window's txids, not under its prefix
          {**unlink(13, "/data/ml/dt=1/d"), "type": "RENAME",
           "dst_path": "/user/etl-cleanup/.Trash/Current/data/ml/dt=1/d"}]


def test_a_mass_delete_is_named_by_the_users_the_rollups_gave_it(tmp_path: Path):
    window = named_mass_delete({**WINDOW, "user": "etl-cleanup, root",
                                "unattributed_deletes": 0}, EVENTS)
    assert window.user == "etl-cleanup, root" and window.unattributed == 0
    line = "mass delete: 3 files under /data/ml/dt=1 by etl-cleanup, root (10:00-10:10)"
    assert window.line() == line
    report = DemoReport(
        source_events=4, events_by_type={"UNLINK": 3, "RENAME": 1}, lake_rows=4, raw_rows=4,
        quarantined=0, quarantine_reasons=[], lag_ms=[], activity=[], top_dirs_by_bytes=[],
        mass_deletes=[window], log_lines=[], attributed=4)
    text = text_summary(report)
    assert line in text
    assert "Attributed: 4 of 4 events have a user (100.00 %)" in text
    assert f"<li>{line}</li>" in write_html(report, tmp_path).read_text()


def test_a_mass_delete_without_users_says_the_join_left_it_unknown():
    window = named_mass_delete({**WINDOW, "user": "etl-cleanup", "unattributed_deletes": 2},
                               EVENTS)
    assert "by etl-cleanup (2 deletes unattributed)" in window.line()
    assert named_mass_delete({**WINDOW, "user": None, "unattributed_deletes": 3},
                             EVENTS).line() == (
        "mass delete: 3 files under /data/ml/dt=1 by (unknown) (the audit join left every "
        "delete of it without a user) (10:00-10:10)")


def test_the_attribution_check_fails_on_another_user_or_too_few_users():
    deleted = ["/data/ml/dt=1/a", "/data/ml/dt=1/b"]
    right = {("demo", t, 0): "etl-cleanup" for t in (10, 11, 13)} | {("demo", 12, 0): "bob"}
    assert attribution_problems(EVENTS, right, min_share=0.99, mass_delete_user="etl-cleanup",
                                mass_delete_paths=deleted) == []
    wrong = {**right, ("demo", 11, 0): "bob"}
    assert attribution_problems(EVENTS, wrong, min_share=0.99, mass_delete_user="etl-cleanup",
                                mass_delete_paths=deleted) == [
        "the mass delete run as etl-cleanup is attributed to bob (1)",
        "1 of the mass delete's 2 UNLINKs are attributed to etl-cleanup, under 99 %"]
    few = {("demo", 10, 0): "etl-cleanup", ("demo", 11, 0): "etl-cleanup"}
    assert attribution_problems(EVENTS, few, min_share=0.99, mass_delete_user="etl-cleanup",
                                mass_delete_paths=deleted) == [
        "2 of the 4 events an audit line names have a user (50.00 %), under 99 %; without one: "
        "UNLINK 1, RENAME 1"]
    # Directories made as parents are named by no audit line: not counted.
    assert attribution_problems(EVENTS, few, min_share=0.99, mass_delete_user=None,
                                mass_delete_paths=(), parents={("demo", 12, 0), ("demo", 13, 0)}
                                ) == []
