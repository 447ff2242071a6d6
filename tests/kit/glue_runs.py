"""Glue job runs on the moto server, run for real: moto records a StartJobRun (and moves its state
along by itself) but runs nothing, so this runs the job's entry script locally (its own process,
a local SparkSession) once for every run started on the named job, with the job's default
arguments and the run's, in the environment given (the Glue role's credentials, say).

    with LocalGlueRuns(job_name, "glue_jobs.namespace_inventory", env) as runs:
        ...                   # the agent starts a run; it is run here
    runs.finished             # [(run id, return code, stderr tail)]
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3

REPO = Path(__file__).resolve().parents[2]


class LocalGlueRuns:
    def __init__(self, job_name: str, module: str, env: Mapping[str, str], *,
                 poll_s: float = 0.5) -> None:
        self.job_name, self.module, self.env, self.poll_s = job_name, module, dict(env), poll_s
        self.finished: list[tuple[str, int, str]] = []
        self.seconds: dict[str, float] = {}  # run id -> the entry script's wall time
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="glue-runs", daemon=True)
        self._glue: Any = boto3.client("glue")

    def __enter__(self) -> LocalGlueRuns:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        defaults = self._glue.get_job(JobName=self.job_name)["Job"].get("DefaultArguments", {})
        while not self._stop.wait(self.poll_s):
            for run in self._glue.get_job_runs(JobName=self.job_name)["JobRuns"]:
                if run["Id"] in self._seen:
                    continue
                self._seen.add(run["Id"])
                args = {**defaults, **run.get("Arguments", {})}
                argv = [a for k, v in args.items() if k.startswith("--") for a in (k, v)]
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", self.module, *argv], env=self.env,
                                      cwd=REPO, capture_output=True, text=True, timeout=4 * 3600)
                self.seconds[run["Id"]] = time.perf_counter() - started
                self.finished.append((run["Id"], done.returncode, done.stderr[-3000:]))

