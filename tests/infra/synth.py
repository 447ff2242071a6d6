"""One synth per environment per test session, shared by tests/infra and tests/integration/infra.

Each environment is synthesized the way `make synth ENV=<env>` does it (`app.py --env ENV
--outdir DIR` in a subprocess), with every AWS credential variable removed and the config files
pointed at /dev/null: a synth that needed an account, a lookup or credentials fails here. The
three environments run side by side (each synth is a Node process; ~10-30 s).
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from tests.kit.local_cloud import REPO, Assembly, offline_env, read_assembly, synth_command

ENVIRONMENTS = ("dev", "prod", "local")


@cache
def synthesized() -> dict[str, Assembly]:
    root = Path(tempfile.mkdtemp(prefix="hdfs-events-synth-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    procs = {
        env: subprocess.Popen(
            synth_command(env, root / env), cwd=REPO, env=offline_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for env in ENVIRONMENTS
    }
    failures = []
    for env, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(f"app.py --env {env} exited {proc.returncode}:\n"
                            + "\n".join(err.strip().splitlines()[-20:]))
    if failures:
        raise AssertionError("\n\n".join(failures))
    return {env: read_assembly(root / env) for env in ENVIRONMENTS}
