"""Plain-value planning of the compaction: file counts, lookback windows, gzip checks, run ids."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

from glue_jobs.compaction import (
    files_for,
    gzip_problem,
    key_bounds,
    key_slices,
    lookback_partitions,
    quantile_spans,
    read_paths,
    rows_per_file,
    shuffle_partitions,
    total_files,
)
from hdfs_events.lake_layout import new_run_id, parse_raw_key, run_started


def test_file_count_grows_with_rows_and_never_drops_to_zero():
    per_file = rows_per_file(128 * 1_048_576, 64.0)
    assert per_file == 2_097_152
    assert files_for(0, per_file) == files_for(1, per_file) == 1
    assert files_for(per_file, per_file) == 1
    assert files_for(per_file + 1, per_file) == 2
    assert total_files({("c", "2015-01-13"): 5_000_000, ("c", "2015-01-14"): 10}, per_file) == 4


def test_lookback_covers_published_neighbours_only():
    published = {("c", "2015-01-12"), ("c", "2015-01-13"), ("c", "2015-01-15"),
                 ("d", "2015-01-13")}
    assert lookback_partitions([("c", "2015-01-14")], published, 1) == {
        ("c", "2015-01-13"), ("c", "2015-01-15")}
    assert lookback_partitions([("c", "2015-01-14")], published, 0) == set()
    assert lookback_partitions([("c", "2015-01-13")], published, 2) == {
        ("c", "2015-01-12"), ("c", "2015-01-13"), ("c", "2015-01-15")}


def test_folders_are_read_whole_only_when_all_they_hold_is_readable():
    h07, h08, h09 = (f"raw/cluster=c1/dt=2015-01-13/hour={h}" for h in ("07", "08", "09"))
    listed = [f"{h07}/a.jsonl.gz", f"{h07}/b.jsonl.gz",  # both new
              f"{h08}/old.jsonl.gz", f"{h08}/new.jsonl.gz",  # one compacted by an earlier run
              f"{h09}/x.jsonl.gz", f"{h09}/README",  # a stray beside a new object
              "raw/cluster=c1/dt=2015-01-13/hour=10/_y.jsonl.gz"]  # a name Hadoop hides
    readable = [f"{h07}/b.jsonl.gz", f"{h07}/a.jsonl.gz", f"{h08}/new.jsonl.gz",
                f"{h09}/x.jsonl.gz", "raw/cluster=c1/dt=2015-01-13/hour=10/_y.jsonl.gz"]
    assert read_paths(readable, listed) == [
        f"{h07}/", f"{h08}/new.jsonl.gz", f"{h09}/x.jsonl.gz",
        "raw/cluster=c1/dt=2015-01-13/hour=10/_y.jsonl.gz"]
    assert read_paths([], listed) == []


def test_gzip_problems_are_named():
    good = gzip.compress(b'{"a":1}\n')
    assert gzip_problem(good) is None
    assert gzip_problem(good + gzip.compress(b"more\n")) is None  # multi-member gzip
    assert gzip_problem(gzip.compress(b"")) is None
    assert "not valid gzip" in gzip_problem(b"plain text")
    assert "truncated" in gzip_problem(good[:-6])
    assert "empty object" in gzip_problem(b"")
    # UTF-8 is checked line by line in Spark (classify_lines, with_reasons), not here.
    assert gzip_problem(gzip.compress(b"\xff\xfe")) is None


def test_raw_keys_parse_as_the_consumer_writes_them():
    key = parse_raw_key("raw/cluster=c1/dt=2015-01-13/hour=07/abc-123.jsonl.gz")
    assert key is not None
    assert (key.cluster, key.dt, key.hour, key.member) == ("c1", "2015-01-13", "07",
                                                           "hour=07/abc-123.jsonl.gz")
    assert parse_raw_key("raw/cluster=c1/dt=2015-01-13/notes.txt") is None


def test_run_ids_sort_by_start_time_and_carry_it():
    t = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    run = new_run_id(t)
    assert run_started(run) == t
    assert run_started("not-a-run") is None
    assert new_run_id(t) != run


def test_shuffle_partitions_follow_the_input_with_two_per_core_at_least():
    mib = 1_048_576
    assert shuffle_partitions(0, 128 * mib, cores=2) == 4
    assert shuffle_partitions(10 * mib, 128 * mib, cores=2) == 4
    assert shuffle_partitions(2_400 * mib, 128 * mib, cores=2) == 19  # 10M events of text
    assert shuffle_partitions(2_400 * mib, 128 * mib, cores=40) == 80  # a Glue fleet


def test_key_slices_fill_the_last_wave_when_it_costs_a_quarter_more_files_at_most():
    assert key_slices(5, cores=2) == 6  # 2+2+2 tasks instead of 2+2+1
    assert key_slices(4, cores=2) == 4
    assert key_slices(3, cores=2) == 3  # 4 would be a third more files
    assert key_slices(1, cores=40) == 1  # a small run on a Glue fleet keeps its one file
    assert key_slices(78, cores=40) == 80


def test_key_bounds_cut_even_ranges_across_clusters_in_key_order():
    # c1 holds 300 rows over txids 0..299, c2 100 rows over 1000..1099: 4 ranges of 100.
    spans = [("c2", 1000, 1099, 100.0), ("c1", 0, 299, 300.0)]
    assert key_bounds(spans, 4) == (("c1", 100), ("c1", 200), ("c1", 300))
    assert key_bounds(spans, 1) == ()


def test_key_bounds_add_overlapping_spans_and_skip_repeated_cuts():
    # Published files and new lines over the same txids: their densities add up.
    spans = [("c1", 0, 99, 100.0), ("c1", 50, 99, 100.0)]
    assert key_bounds(spans, 2) == (("c1", 67),)  # 50 + 50 rows before it, 100 from it
    # One txid holding nearly everything cannot be cut: fewer, larger ranges.
    assert key_bounds([("c1", 5, 5, 1000.0), ("c1", 6, 6, 1.0)], 4) == (("c1", 6),)


def test_quantile_spans_share_a_partitions_rows_between_its_quantiles():
    assert quantile_spans("c1", [0, 10, 40], 100) == [("c1", 0, 10, 50.0), ("c1", 10, 40, 50.0)]
    assert quantile_spans("c1", [7], 3) == [("c1", 7, 7, 3.0)]
    assert quantile_spans("c1", [], 0) == []
