"""Benchmarks (each prints figures beside a baseline measured in the same run), the workload
generator they share, and the local harness that runs the whole chain on one machine (moto
server, deploy of the synthesized template, the demo)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Where every bench writes its JSON and caches its inputs: bench-out/ of the directory it runs
# in (`make bench`: the repo). bench.run_all sets BENCH_OUT for the smoke run in a temp dir.
OUT_DIR = Path(os.environ.get("BENCH_OUT") or Path.cwd() / "bench-out").resolve()
