"""verify: a listing double against an index double with planted drift."""

from __future__ import annotations

from onprem_agent.verify import Drift, IndexedEntry, verify_prefix
from tests.unit.live.doubles import DictIndex, ListingDouble, dir_entry, file_entry, indexed

C = "prod"


def test_planted_drift_is_found_with_the_txid_the_index_had_reached():
    hdfs = [dir_entry("/d"), dir_entry("/d/sub", mtime=99), file_entry("/d/a", size=10),
            file_entry("/d/sub/b", size=5, mtime=7), file_entry("/d/only-in-hdfs"),
            file_entry("/d/grown", size=50), dir_entry("/d/was-file")]
    index = [indexed(hdfs[0]), indexed(hdfs[1], mtime=1),  # dir mtimes are not compared
             indexed(hdfs[2]), indexed(hdfs[3], mtime=6, last_txid=250),
             indexed(hdfs[5], size=40), IndexedEntry("/d/was-file", "FILE", 1, 1, 90),
             IndexedEntry("/d/only-in-index", "FILE", 3, 3, 120)]
    report = verify_prefix(C, "/d", ListingDouble(hdfs), DictIndex(index), workers=2)
    assert sorted((d.kind, d.path) for d in report.drifts) == [
        ("extra", "/d/only-in-index"), ("missing", "/d/only-in-hdfs"), ("mtime", "/d/sub/b"),
        ("size", "/d/grown"), ("type", "/d/was-file")]
    assert report.index_txid == 250
    assert report.hdfs_entries == 7 and report.index_entries == 7
    lines = report.lines()
    assert "5 differ" in lines[0] and "index reached txid 250" in lines[0]
    assert "SIZE differs: /d/grown: hdfs=50 index=40 (index at txid 100)" in lines


def test_a_consistent_index_has_no_drift():
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    report = verify_prefix(C, "/d", ListingDouble(hdfs), DictIndex([indexed(e) for e in hdfs]))
    assert report.count == 0 and report.hdfs_entries == report.index_entries == 2


def test_names_the_two_sides_order_differently_are_matched():
    # HDFS lists "é" (0xC3 0xA9) before "a" (signed bytes), DynamoDB after "b" (unsigned),
    # and "aé" between "a" and "a-x" on one side only.
    names = ["é", "a", "aé", "a-x", "b", "中/x"]
    hdfs = [dir_entry("/d"), dir_entry("/d/中"),
            *(file_entry(f"/d/{n}") for n in names)]
    index = [indexed(e) for e in hdfs if e.path != "/d/a-x"]
    index.append(IndexedEntry("/d/éé", "FILE", 1, 1, 7))
    report = verify_prefix(C, "/d", ListingDouble(hdfs, page_size=2), DictIndex(index))
    assert sorted((d.kind, d.path) for d in report.drifts) == [
        ("extra", "/d/éé"), ("missing", "/d/a-x")]


def test_an_index_subtree_hdfs_lacks_is_extra_to_its_leaves():
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    index = [indexed(e) for e in hdfs] + [
        IndexedEntry("/d/gone", "DIRECTORY", None, 1, 5),
        IndexedEntry("/d/gone/deep", "DIRECTORY", None, 1, 5),
        IndexedEntry("/d/gone/deep/f", "FILE", 1, 1, 6),
        IndexedEntry("/d/a/below-a-file", "FILE", 1, 1, 6)]
    report = verify_prefix(C, "/d", ListingDouble(hdfs), DictIndex(index))
    assert [(d.kind, d.path) for d in report.drifts] == [
        ("extra", "/d/gone"), ("extra", "/d/gone/deep"), ("extra", "/d/gone/deep/f")]
    assert report.index_entries == 5 and report.index_txid == 100


def test_drift_streams_to_a_callback_and_the_report_keeps_the_first():
    hdfs = [dir_entry("/d"), *(file_entry(f"/d/f{i:04}") for i in range(50))]
    found: list[Drift] = []
    report = verify_prefix(C, "/d", ListingDouble(hdfs, page_size=7),
                           DictIndex([indexed(hdfs[0])]), on_drift=found.append, keep=10)
    assert report.count == len(found) == 50
    assert report.drifts == tuple(found[:10])
    assert [d.path for d in found] == [e.path for e in hdfs[1:]]  # walk order, as found
    assert "50 differ" in report.lines()[0] and len(report.lines()) == 11


def test_the_root_prefix_and_a_prefix_gone_from_hdfs():
    hdfs = [dir_entry("/d"), file_entry("/d/a"), file_entry("/top")]
    index = [indexed(e) for e in hdfs]
    assert verify_prefix(C, "/", ListingDouble(hdfs), DictIndex(index)).count == 0
    gone = [IndexedEntry("/x", "DIRECTORY", None, 1, 3), IndexedEntry("/x/f", "FILE", 1, 1, 4)]
    report = verify_prefix(C, "/x", ListingDouble(hdfs), DictIndex(index + gone))
    assert [(d.kind, d.path) for d in report.drifts] == [("extra", "/x"), ("extra", "/x/f")]
