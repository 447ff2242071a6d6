"""The `make bench` table: figures beside their baselines, failures named, results JSON read."""

from __future__ import annotations

import json
import math

from bench import run_all
from bench.run_all import Bench, BenchRun, Figure, figures_of, format_table, last_error_line, ratio


def test_ratio_says_how_many_times_better_in_either_direction():
    faster = Figure("translate", "ops/s", 120_000, 60_000, "iterparse", "200k")
    cheaper = Figure("billed", "req", 1.0, 100.0, "example", "100k", higher_is_better=False)
    worse = Figure("compaction", "rows/s", 15_000, 90_000, "pyarrow", "300k")
    assert ratio(faster) == "2.00x"
    assert ratio(cheaper) == "100.00x"
    assert ratio(worse) == "0.17x"


def test_ratio_without_a_baseline_is_a_dash():
    assert ratio(Figure("end to end", "ev/s", 19_000, None, "", "")) == "-"
    assert ratio(Figure("p99", "ms", math.nan, 300.0, "floor", "")) == "-"


def test_table_rows_hold_figure_baseline_ratio_and_size():
    table = format_table([
        Figure("edit-log translation", "ops/CPU s", 70_374, 63_937, "iterparse+findtext",
               "200k-op edit log (default 1M)"),
        Figure("freshness edit->lake p50 at 200 ev/s", "ms", 606.0, 337.0, "zero-linger floor",
               "15 s per load", higher_is_better=False, note="edit->sent 257 ms"),
    ])
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["figure", "unit", "ours", "baseline"]
    row = next(line for line in lines if line.startswith("edit-log translation"))
    assert "70,374" in row and "63,937" in row and "1.10x" in row
    assert "200k-op edit log (default 1M)" in row
    fresh = next(line for line in lines if line.startswith("freshness"))
    assert "606" in fresh and "337" in fresh and "0.56x" in fresh and "edit->sent 257 ms" in fresh
    # Columns line up: every row's ratio column ends at the same place.
    ends = {line.index("x ", line.index(" vs ") if " vs " in line else 0) for line in lines[2:]}
    assert len(ends) == 1


def test_failed_bench_is_a_row_with_its_last_error_line():
    table = format_table([], [("compact", "exit 1: java.lang.OutOfMemoryError: heap")])
    row = table.splitlines()[-1]
    assert row.startswith("compact: FAILED")
    assert row.endswith("exit 1: java.lang.OutOfMemoryError: heap")


def test_last_error_line_is_the_exception_not_the_traceback_head():
    stderr = "Traceback (most recent call last):\n  File x\nRuntimeError: moto went away\n\n"
    assert last_error_line(stderr) == "RuntimeError: moto went away"
    assert last_error_line("", "only stdout\n") == "only stdout"
    assert last_error_line("", "") == "no output"


_TRANSLATE = next(b for b in run_all.BENCHES if b.name == "translate")


def _bench(name: str, output: str) -> Bench:
    return Bench(name, f"bench.{name}", output, _TRANSLATE.figures, quick=(),
                 quick_size="tiny", smoke=())


def test_unreadable_bench_json_is_reported_not_raised():
    bench = _bench("translate", "translate.json")
    rows, problem = figures_of(BenchRun("translate", "ok", 1.0, "", {"ops": 1}), bench)
    assert rows == [] and "unreadable translate.json" in problem


def test_failing_bench_does_not_stop_the_others(tmp_path, monkeypatch):
    ok = _bench("translate", "translate.json")
    result = {"ops": 10, "same_events": True,
              "results": {"ours": {"ops_per_cpu_s": 20}, "baseline": {"ops_per_cpu_s": 10}}}

    def fake_run(bench: Bench, work_dir, size):
        if bench.name == "bridge":
            return BenchRun("bridge", "failed", 0.1, "exit 1: ImportError: jpype")
        return BenchRun(bench.name, "ok", 0.1, "", result)

    monkeypatch.setattr(run_all, "run_bench", fake_run)
    monkeypatch.setattr(run_all, "BENCHES", (ok, _bench("bridge", "bridge.json")))
    out = tmp_path / "bench-out" / "results.json"
    assert run_all.main(["--work-dir", str(tmp_path)]) == 1
    saved = json.loads(out.read_text())
    assert saved["benches"]["bridge"]["status"] == "failed"
    assert saved["benches"]["translate"]["status"] == "ok"
    assert saved["figures"][0]["ratio"] == "2.00x"
    assert {"timestamp", "git_commit", "load_average_before", "cpus"} <= saved.keys()
