"""Every bench of `make bench` still runs: each at its smoke size, in one temp dir, one test per
bench (so `--durations` names the slow one), then the run's table, results.json and the cost
model from their JSON, as `python -m bench.run_all --size smoke` makes them.

A contract change that breaks a bench's input generator or its JSON fails here, not weeks later
in a `make bench` nobody ran. Nothing is timed: the smoke sizes measure nothing worth reading.
The benches come from bench.run_all.BENCHES, so a bench registered there is smoked here too.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench import run_all

BY_NAME = {b.name: b for b in run_all.BENCHES}


@dataclass
class SmokeRun:
    """The module's one run: each bench at most once, after the benches it reads."""

    work: Path
    started: float = field(default_factory=time.time)
    load_before: tuple[float, float, float] = field(default_factory=os.getloadavg)
    runs: dict[str, run_all.BenchRun] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return self.work / "bench-out"

    def run(self, bench: run_all.Bench) -> run_all.BenchRun:
        for name in bench.reads:  # e.g. `-k lake` alone
            self.run(BY_NAME[name])
        if bench.name not in self.runs:
            self.runs[bench.name] = run_all.run_bench(bench, self.work, "smoke")
        return self.runs[bench.name]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    return SmokeRun(tmp_path_factory.mktemp("bench-smoke"))


@pytest.mark.parametrize("bench", run_all.BENCHES, ids=lambda b: b.name)
def test_bench_runs_and_writes_its_json_and_its_figures(smoke: SmokeRun, bench: run_all.Bench):
    run = smoke.run(bench)
    assert run.status == "ok", run.error
    assert json.loads((smoke.out / bench.output).read_text()) == run.result
    rows, problem = run_all.figures_of(run, bench, "smoke")
    assert problem == ""
    assert rows, f"{bench.name} gave no figure"


def test_the_run_reports_every_bench_and_bills_a_billion_events(smoke: SmokeRun):
    runs = [smoke.run(b) for b in run_all.BENCHES]
    status = run_all.report(run_all.BENCHES, runs, smoke.out, "smoke", started=smoke.started,
                            load_before=smoke.load_before, cost_model=True)
    saved = json.loads((smoke.out / "results.json").read_text())
    failed = {name: b["error"] for name, b in saved["benches"].items() if b["status"] != "ok"}
    assert (status, failed, list(saved["benches"])) == (
        0, {}, [b.name for b in run_all.BENCHES])
    bills = [f for f in saved["figures"] if f["figure"].startswith("AWS bill per billion")]
    assert [f["figure"] for f in bills] == ["AWS bill per billion events, log all",
                                           "AWS bill per billion events, log summary"]
    assert all(f["ours"] > 0 and f["baseline"] > 0 for f in bills)
