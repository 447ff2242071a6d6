"""Every bench of `make bench` still runs: each at its smoke size (seconds), in a temp dir.

A contract change that breaks a bench's input generator or its JSON fails here, not weeks later
in a `make bench` nobody ran. Nothing is timed: the smoke sizes measure nothing worth reading.
The benches come from bench.run_all.BENCHES, so a bench registered there is smoked here too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import run_all


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """One smoke run of every bench (the cost model needs all of them): (exit status, dir)."""
    work = tmp_path_factory.mktemp("bench-smoke")
    status = run_all.main(["--size", "smoke", "--work-dir", str(work)])
    return status, work / "bench-out"


def test_the_whole_smoke_run_exits_0(smoke):
    status, out = smoke
    failed = {name: b["error"] for name, b in
              json.loads((out / "results.json").read_text())["benches"].items()
              if b["status"] != "ok"}
    assert (status, failed) == (0, {})


@pytest.mark.parametrize("bench", run_all.BENCHES, ids=lambda b: b.name)
def test_bench_writes_its_json_and_its_figures(smoke, bench):
    _, out = smoke
    saved = json.loads((out / "results.json").read_text())["benches"][bench.name]
    assert saved["status"] == "ok", saved["error"]
    assert json.loads((out / bench.output).read_text()) == saved["result"]
    assert bench.figures(saved["result"], "smoke"), f"{bench.name} gave no figure"


def test_cost_model_bills_a_billion_events_from_the_smoke_json(smoke):
    _, out = smoke
    rows, problem = run_all.cost_figures(out)
    assert problem == ""
    assert [r.figure for r in rows] == ["AWS bill per billion events, log all",
                                        "AWS bill per billion events, log summary"]
    assert all(r.ours and r.ours > 0 and r.baseline and r.baseline > 0 for r in rows)
