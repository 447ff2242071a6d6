"""The namespace index catching up on a backlog: a million indexed events waiting (every
message arrived, every range closed while the index was not applying), applied to the end
through the sequencer on in-memory stores, beside the in-order replay of the same events into
plain dicts in the same run.

    python -m bench.index_backlog [--events 1000000]

Workload: tests.kit.backlog's jobs (part files under `_temporary`, appends, renames into
place, `_temporary` deleted, outputs archived and archives deleted), messages of 1,000 events.
Ours is the index's own logic (lambdas.ingest: sequencer chunks, coalescing, walks) with no
AWS, timed by CPU around `apply_ranges`; the baseline is tests.kit.replay's in-order state of
the same events, the reference ours must equal (the bench fails when it does not). Writes are
the index store's puts, against one per event. Writes bench-out/index_backlog.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench import OUT_DIR
from lambdas.ingest.sequencer import CHUNK_EVENTS, TXID_DONE, Position
from tests.kit.backlog import CLUSTER, INDEXED, backlog, jobs
from tests.kit.replay import in_order_state


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.index_backlog",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=OUT_DIR / "index_backlog.json")
    args = parser.parse_args(argv)
    events = list(jobs(args.events))
    sequencer = backlog(events, per_message=CHUNK_EVENTS)
    start, cpu = time.perf_counter(), cpu_s()
    report = sequencer.apply_ranges(CLUSTER, deadline_ms=2**62)
    ours_cpu, ours_s = cpu_s() - cpu, time.perf_counter() - start
    if (report.position, report.events, report.more) != (
            Position(events[-1].txid, TXID_DONE), len(events), False):
        raise SystemExit(f"bench.index_backlog: the backlog was not applied to the end: "
                         f"{report.position}, {report.events:,} of {len(events):,} events")
    cpu = cpu_s()
    expected = in_order_state(events, INDEXED)
    replay_cpu = cpu_s() - cpu
    store = sequencer.index.store
    if store.live(CLUSTER) != expected:  # type: ignore[attr-defined]
        raise SystemExit("bench.index_backlog: the index differs from the in-order replay")
    puts = store.puts  # type: ignore[attr-defined]
    result = {"events": len(events), "seconds": round(ours_s, 2),
              "events_per_cpu_s": round(len(events) / ours_cpu),
              "replay_events_per_cpu_s": round(len(events) / max(replay_cpu, 1e-3)),
              "puts": puts, "puts_per_1000": round(1000 * puts / len(events), 1),
              "live_paths": len(expected), "load_average": os.getloadavg()}
    print(f"index backlog: {len(events):,} events applied in {ours_cpu:.1f} CPU s "
          f"({result['events_per_cpu_s']:,}/CPU s; in-order replay "
          f"{result['replay_events_per_cpu_s']:,}/CPU s), {puts:,} puts "
          f"({result['puts_per_1000']} per 1,000 events)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
