"""Runs Glue entry scripts the way a Glue 5.1 job run does, for test_glue_scripts.py.

Started as `python3.11 -I -S run_as_glue.py EXTRA_PY_FILES SITE OUT SCRIPT ARGS [SCRIPT ARGS]`
(ARGS a JSON list): no site-packages, no PYTHON* variables, no script directory on sys.path.
The path is then the job's --extra-py-files zip, the modules Glue provides (SITE) and the
standard library. Each script runs as __main__ with the job's arguments, one after the other in
this process, as Glue runs a script; what they print is their report. Writes the file of every
module loaded as JSON to OUT.
"""

import json
import runpy
import sys

extra_py_files, site, out_path = sys.argv[1:4]
jobs = sys.argv[4:]
sys.path[:0] = [extra_py_files, site]

for script, args in zip(jobs[::2], jobs[1::2], strict=True):
    sys.argv = [script, *json.loads(args)]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    sys.stdout.flush()

# This script stands where Glue's own launcher does: not counted.
modules = sorted({m.__file__ for m in list(sys.modules.values())
                  if getattr(m, "__file__", None) not in (None, __file__)})
with open(out_path, "w") as f:
    json.dump(modules, f)
