"""CPU seconds by part of a run, from /proc: what each process tree took between two readings,
so a bench can say what a 2-core machine carried and where it went."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stats() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of the process and its children it has waited for)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # gone since the listing
        # Fields after the command name (in parentheses, which may hold spaces): state, ppid, ...
        fields = text[text.rindex(")") + 2:].split()
        utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
        out[int(entry.name)] = (int(fields[1]), (utime + stime + cutime + cstime) / TICK)
    return out


def _tree_seconds(stats: dict[int, tuple[int, float]], roots: list[int]) -> float:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [pid for pid in roots if pid in stats]
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


class CpuMeter:
    """Started at construction; `read()` gives each part's CPU seconds since then, with "this
    process" (its own threads) and "children reaped" (children of this process that ended and
    were waited for in between, e.g. a `subprocess.run`). A process of a part that ends in
    between takes its last readings with it, unless its parent (in the part) waited for it."""

    def __init__(self, parts: dict[str, list[int]]) -> None:
        self.parts = parts
        self._wall = time.perf_counter()
        self._start = self._now()

    def _now(self) -> dict[str, float]:
        stats = _stats()
        own = os.times()
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {**{name: _tree_seconds(stats, pids) for name, pids in self.parts.items()},
                "this process": own.user + own.system,
                "children reaped": reaped.ru_utime + reaped.ru_stime}

    def read(self) -> dict[str, float]:
        end, wall = self._now(), time.perf_counter() - self._wall
        return {"wall_s": round(wall, 2), "cores": os.cpu_count() or 1,
                **{name: round(end[name] - self._start[name], 2) for name in end}}
