"""cover_dirs / ignore_patterns, as SSM applies them."""

from __future__ import annotations

import re

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.filters import PathFilter


def event(path: str, type_: EventType = EventType.CREATE, dst: str | None = None) -> HdfsEvent:
    return HdfsEvent(cluster="c", txid=1, index=0, type=type_, path=path, dst_path=dst)


def rename(src: str, dst: str) -> HdfsEvent:
    return event(src, EventType.RENAME, dst)


def test_cover_dirs_match_on_component_boundaries() -> None:
    f = PathFilter(["/data/a"])
    assert f.keeps(event("/data/a"))
    assert f.keeps(event("/data/a/x/y"))
    assert not f.keeps(event("/data/ab"))
    assert not f.keeps(event("/data/ab/x"))
    assert not f.keeps(event("/data"))


def test_trailing_slash_and_root_cover_dirs() -> None:
    assert PathFilter(["/data/a/"]).keeps(event("/data/a/x"))
    assert PathFilter(["/"]).keeps(event("/anything"))
    assert PathFilter([]).keeps(event("/anything"))


def test_ignore_patterns_drop_copying_temp_files() -> None:
    f = PathFilter([], [r"\._COPYING_$"])
    assert not f.keeps(event("/data/a/part-0._COPYING_"))
    assert f.keeps(event("/data/a/part-0"))


def test_finishing_an_upload_rename_is_kept_though_its_source_is_ignored() -> None:
    f = PathFilter([], [r"\._COPYING_$"])
    assert f.keeps(rename("/data/a/f._COPYING_", "/data/a/f"))


def test_rename_into_or_out_of_a_covered_dir_is_kept() -> None:
    f = PathFilter(["/data/a"])
    assert f.keeps(rename("/tmp/x", "/data/a/x"))
    assert f.keeps(rename("/data/a/x", "/trash/x"))
    assert not f.keeps(rename("/tmp/x", "/tmp/y"))


def test_several_patterns_any_one_ignores() -> None:
    f = PathFilter(["/data"], [r"/_temporary/", r"\.tmp$"])
    assert not f.keeps(event("/data/a/_temporary/0/part"))
    assert not f.keeps(event("/data/a/x.tmp"))
    assert f.keeps(event("/data/a/x"))


def test_the_chunk_filter_keeps_what_keeps_keeps_whatever_is_configured() -> None:
    gap = HdfsEvent(cluster="c", txid=1, index=0, type=EventType.GAP, path="/", gap_end_txid=9)
    events = [event("/data/a/x"), event("/data/a"), event("/data/ab"), event("/other/x.tmp"),
              event("/data/a/x.tmp"), rename("/tmp/x", "/data/a/x"), rename("/data/a/y.tmp", "/u"),
              rename("/tmp/x", "/tmp/y"), gap]
    chunks = [[e] for e in events] + [list(events), events[:2], []]
    for f in (PathFilter(), PathFilter(["/"]), PathFilter(["/data/a"]),
              PathFilter([], [r"\.tmp$"]), PathFilter(["/data/a", "/other"], [r"\.tmp$"])):
        for chunk in chunks:
            assert f.kept_of(chunk) == [e for e in chunk if f.keeps(e)], (f, chunk)


def test_a_literal_end_pattern_ignores_exactly_what_its_regex_finds() -> None:
    # Such patterns are tested by str.endswith, not the regex (filters._ignored_test); the
    # verdict must be re.search's, "$" before a final newline included.
    patterns = [r"\._COPYING_$", r"_COPYING_$", r"\.tmp$", r"a\\$", r"x\$", r"a.b$", r"\d$",
                r"\.TM[Pp]$", r"^/tmp/", r"$"]
    paths = ["/d/f._COPYING_", "/d/f._COPYING_\n", "/d/f._COPYING_x", "/d/f_COPYING_",
             "/d/x.tmp", "/d/x.TMP", "/d/xtmp", "/d/a\\", "/d/x$", "/d/x", "/d/axb", "/d/a.b",
             "/d/f1", "/tmp/f", "/d/tmp/f", ""]
    for chosen in [[p] for p in patterns] + [patterns[:3], patterns[2:6], patterns]:
        f = PathFilter([], chosen)
        for path in paths:
            found = any(re.search(p, path) for p in chosen)
            assert f.passes(path) is not found, (chosen, path)
