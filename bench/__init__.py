"""Benchmarks, each printing its figures beside a baseline measured in the same run. Their
inputs come from the test kit (tests/kit); the benches of the whole chain run on the kit's
local chain (tests/kit/local_chain.py), as the demo and the e2e tests do."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Where every bench writes its JSON and caches its inputs: bench-out/ of the directory it runs
# in (`make bench`: the repo). bench.run_all sets BENCH_OUT for the smoke run in a temp dir.
OUT_DIR = Path(os.environ.get("BENCH_OUT") or Path.cwd() / "bench-out").resolve()
