"""Executor CPU per stage from Spark's event log (`spark.eventLog.enabled`): on a shared machine
CPU seconds compare where wall seconds do not. Used by bench.compact and bench.inventory_scale."""

from __future__ import annotations

import json
from pathlib import Path


def stage_breakdown(log: Path) -> list[dict]:
    """Per stage of a Spark event log: its call site, tasks, executor CPU and run seconds, and
    the rows and bytes it wrote to a shuffle, summed from its tasks' metrics."""
    names: dict[int, str] = {}
    stages: dict[int, dict] = {}
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            names[info["Stage ID"]] = info["Stage Name"]
        elif event["Event"] == "SparkListenerTaskEnd" and event.get("Task Metrics"):
            m = event["Task Metrics"]
            shuffle = m.get("Shuffle Write Metrics", {})
            s = stages.setdefault(event["Stage ID"], {"tasks": 0, "cpu_s": 0.0, "run_s": 0.0,
                                                      "shuffle_mb": 0.0, "shuffle_rows": 0})
            s["tasks"] += 1
            s["cpu_s"] += m.get("Executor CPU Time", 0) / 1e9
            s["run_s"] += m.get("Executor Run Time", 0) / 1e3
            s["shuffle_mb"] += shuffle.get("Shuffle Bytes Written", 0) / 1_048_576
            s["shuffle_rows"] += shuffle.get("Shuffle Records Written", 0)
    return [{"stage": i, "name": names.get(i, "?"), **s} for i, s in sorted(stages.items())]


def print_stages(name: str, stages: list[dict]) -> None:
    total = sum(s["cpu_s"] for s in stages) or 1.0
    print(f"{name}: executor CPU by stage (event log), {total:.1f} s in all")
    # run s: the tasks' wall seconds, which hold the Python workers' time (CPU s is the JVM
    # task threads' only)
    print(f"{'stage':>5} {'tasks':>5} {'CPU s':>7} {'share':>6} {'run s':>7} {'shuffle MB':>10} "
          f"{'shuffle rows':>12}  call site")
    for s in stages:
        print(f"{s['stage']:>5} {s['tasks']:>5} {s['cpu_s']:>7.1f} {s['cpu_s'] / total:>6.1%} "
              f"{s['run_s']:>7.1f} {s['shuffle_mb']:>10.1f} {s['shuffle_rows']:>12,}  "
              f"{s['name'][:60]}")
