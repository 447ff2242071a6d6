"""Every bench of `make bench` still runs: each at its smoke size, in one temp dir, one test per
bench, then the run's table, results.json and the cost model from their JSON, as
`python -m bench.run_all --size smoke` makes them.

A contract change that breaks a bench's input generator or its JSON fails here, not weeks later
in a `make bench` nobody ran. Nothing is timed: the smoke sizes measure nothing worth reading,
so the benches run two at a time (most of a smoke is a JVM starting, a NameNode coming up or a
paced load waiting on its clock: on 2 cores two of them overlap), each after the benches it
reads and never beside one it shares a resource with (run_all.Bench.reads, .shares). Each
test waits for its own bench; its seconds are in the run's table (results.json).
The benches come from bench.run_all.BENCHES, so a bench registered there is smoked here too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import run_all

BY_NAME = {b.name: b for b in run_all.BENCHES}
SIDE_BY_SIDE = 2  # the CI machine's cores


class SmokeRun:
    """The module's one run: each bench at most once, SIDE_BY_SIDE at a time, each after the
    benches it reads and never beside one that shares a resource with it. Of those that may
    start, one worker takes the first queued (the order the tests wait in), the other the
    longest (Bench.smoke_s): a test waits for its own bench and at most the one before it,
    never for most of the smoke (each test has pytest-timeout's 900 s; the whole smoke took
    502 s on CI at load 5.5), and the long benches still start early."""

    def __init__(self, work: Path, benches: list[run_all.Bench]) -> None:
        self.work = work
        self.started, self.load_before = time.time(), os.getloadavg()
        self._pending: list[run_all.Bench] = []
        self._running: set[str] = set()
        self._done: dict[str, run_all.BenchRun] = {}
        self._closed = False
        self._changed = threading.Condition()
        for bench in benches:
            self._queue(bench)
        self._workers = [threading.Thread(target=self._work, args=(i == 0,), name=f"bench-{i}",
                                          daemon=True) for i in range(SIDE_BY_SIDE)]
        for worker in self._workers:
            worker.start()

    @property
    def out(self) -> Path:
        return self.work / "bench-out"

    def run(self, bench: run_all.Bench) -> run_all.BenchRun:
        """The bench's run, once it has finished (queued now if nobody asked for it yet)."""
        with self._changed:
            self._queue(bench)
            self._changed.notify_all()
            self._changed.wait_for(lambda: bench.name in self._done)
            return self._done[bench.name]

    def close(self) -> None:
        """Drops the benches not started; waits for the running ones."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        for worker in self._workers:
            worker.join()

    def _queue(self, bench: run_all.Bench) -> None:
        known = {b.name for b in self._pending} | self._running | set(self._done)
        if bench.name not in known:
            for name in bench.reads:  # e.g. `-k lake` alone
                self._queue(BY_NAME[name])
            self._pending.append(bench)

    def _startable(self, in_order: bool) -> run_all.Bench | None:
        busy = {r for name in self._running for r in BY_NAME[name].shares}
        ready = [b for b in self._pending
                 if all(r in self._done for r in b.reads) and busy.isdisjoint(b.shares)]
        if in_order:
            return ready[0] if ready else None
        return max(ready, key=lambda b: b.smoke_s, default=None)

    def _work(self, in_order: bool) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(
                    lambda: self._closed or self._startable(in_order) is not None)
                if self._closed:
                    return
                bench = self._startable(in_order)
                assert bench is not None
                self._pending.remove(bench)
                self._running.add(bench.name)
            try:
                run = run_all.run_bench(bench, self.work, "smoke")
            except Exception as exc:  # a test waits for this run: it must end with one
                run = run_all.BenchRun(bench.name, "failed", error=f"{type(exc).__name__}: {exc}")
            with self._changed:
                self._running.discard(bench.name)
                self._done[bench.name] = run
                self._changed.notify_all()


@pytest.fixture(scope="module")
def smoke(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmokeRun]:
    # What this session's selection will ask for, queued at once, so two run from the start:
    # every bench with the report's test, else the selected benches (and what they read).
    mine = [item for item in request.session.items if item.module is request.module]
    selected = (list(run_all.BENCHES) if any(not hasattr(i, "callspec") for i in mine)
                else [i.callspec.params["bench"] for i in mine])
    run = SmokeRun(tmp_path_factory.mktemp("bench-smoke"), selected)
    yield run
    run.close()


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
