"""Glue entry scripts run one after the other in one local process, as the scheduled workflow
runs them (compaction, then rollups): each script's own `main` with its own arguments, each
building and stopping its own SparkSession. The JVM starts once: a process of its own per script
paid another Spark JVM start and S3A's first client each (~10 s a script on these cores).

    done = run_in_one_process([("glue_jobs.compact_events", [...]),
                               ("glue_jobs.activity_rollups", [...])], env=...)
    reports(done)   # each script's JSON report, in order
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# The scripts in the order given; the first that fails ends the run with its exit code.
_RUN = """
import importlib, json, sys
for module, argv in json.loads(sys.argv[1]):
    code = importlib.import_module(module).main(argv)
    if code:
        sys.exit(code)
"""


def run_in_one_process(jobs: Sequence[tuple[str, Sequence[str]]], *,
                       env: Mapping[str, str] | None = None,
                       timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """Runs each (entry script module, its arguments) in turn in one `python` process."""
    return subprocess.run([sys.executable, "-c", _RUN, json.dumps([[m, list(a)] for m, a in jobs])],
                          env=None if env is None else dict(env), capture_output=True, text=True,
                          timeout=timeout_s, cwd=REPO, check=False)


def reports(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON report each script printed last, in the order they ran."""
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
