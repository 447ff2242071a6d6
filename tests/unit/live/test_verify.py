"""verify: a listing double against an index double with planted drift."""

from __future__ import annotations

from onprem_agent.verify import IndexedEntry, compare, verify_prefix
from tests.unit.live.doubles import ListingDouble, dir_entry, file_entry

C = "prod"


class DictIndex:
    def __init__(self, entries: list[IndexedEntry]) -> None:
        self.entries = {e.path: e for e in entries}

    def entry(self, cluster: str, path: str) -> IndexedEntry | None:
        return self.entries.get(path)

    def children(self, cluster: str, parent: str) -> list[IndexedEntry]:
        prefix = parent.rstrip("/") + "/"
        return [e for p, e in self.entries.items()
                if p.startswith(prefix) and "/" not in p[len(prefix):]]


def indexed(entry, **changes) -> IndexedEntry:
    values = {"path": entry.path, "type": str(entry.inode_type),
              "size": entry.size if str(entry.inode_type) == "FILE" else None,
              "mtime": entry.mtime, "last_txid": 100}
    return IndexedEntry(**(values | changes))


def test_planted_drift_is_found_with_the_txid_the_index_had_reached():
    hdfs = [dir_entry("/d"), dir_entry("/d/sub", mtime=99), file_entry("/d/a", size=10),
            file_entry("/d/sub/b", size=5, mtime=7), file_entry("/d/only-in-hdfs"),
            file_entry("/d/grown", size=50), dir_entry("/d/was-file")]
    index = [indexed(hdfs[0]), indexed(hdfs[1], mtime=1),  # dir mtimes are not compared
             indexed(hdfs[2]), indexed(hdfs[3], mtime=6, last_txid=250),
             indexed(hdfs[5], size=40), IndexedEntry("/d/was-file", "FILE", 1, 1, 90),
             IndexedEntry("/d/only-in-index", "FILE", 3, 3, 120)]
    report = verify_prefix(C, "/d", ListingDouble(hdfs), DictIndex(index), workers=2)
    assert [(d.kind, d.path) for d in report.drifts] == [
        ("size", "/d/grown"), ("missing", "/d/only-in-hdfs"), ("extra", "/d/only-in-index"),
        ("mtime", "/d/sub/b"), ("type", "/d/was-file")]
    assert report.index_txid == 250
    assert report.hdfs_entries == 7 and report.index_entries == 7
    lines = report.lines()
    assert "5 differ" in lines[0] and "index reached txid 250" in lines[0]
    assert "SIZE differs: /d/grown: hdfs=50 index=40 (index at txid 100)" in lines


def test_a_consistent_index_has_no_drift():
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    report = compare("/d", hdfs, [indexed(e) for e in hdfs])
    assert report.count == 0
