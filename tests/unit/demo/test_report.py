"""The demo's report: the lake is compared with the source on every field, and the report says
where its events came from (live or replayed)."""

from __future__ import annotations

from pathlib import Path

from demo.lake import lake_differences
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
