"""hdfs_events is the contract and only the contract (issue 34): every component imports it, so
it imports none of them, no AWS SDK and no CLI, and importing it touches no file or socket (the
consumer's cold start, the Glue job's driver and the agent all pay for what it does at import)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CONTRACT = REPO / "hdfs_events"
# The project's other packages, the AWS SDK and what only a component's runtime has.
FORBIDDEN = {"boto3", "botocore", "aws_lambda_powertools", "pyspark", "py4j", "jpype",
             "hdfs_events_cli", "onprem_agent", "lambdas", "glue_jobs", "stacks", "app", "demo",
             "bench", "tests"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, at any depth (a function's own import
    runs when it is called: still a dependency), and of every dynamic import call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "__import__")):
            found.append((node.lineno, "<a module named at run time>"))
    return found


def test_the_contract_imports_no_component_no_aws_sdk_and_no_cli() -> None:
    modules = sorted(CONTRACT.rglob("*.py"))
    assert len(modules) > 10
    wrong = [f"{path.relative_to(REPO)}:{line}: imports {name}"
             for path in modules for line, name in _imports(path)
             if name.split(".")[0] in FORBIDDEN or name.startswith("<")]
    assert wrong == []


_IMPORT_ALL = """
import builtins, io, json, os, pkgutil, socket, sys
touched = []
def refuse(what):
    def call(*args, **kwargs):
        touched.append(f"{what} {args[:1]!r}")
        raise OSError(f"the contract {what} at import")
    return call
builtins.open = io.open = refuse("opened")
os.open = refuse("opened")
socket.socket.connect = refuse("connected")
socket.create_connection = refuse("connected")
before = set(sys.modules)
import hdfs_events
names = [m.name for m in pkgutil.walk_packages(hdfs_events.__path__, "hdfs_events.")]
for name in names:
    __import__(name)
loaded = sorted({m.split(".")[0] for m in set(sys.modules) - before})
print(json.dumps({"modules": names, "touched": touched, "loaded": loaded}))
"""


def test_importing_every_contract_module_opens_no_file_or_socket() -> None:
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL], cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "hdfs_events.event" in report["modules"]
    assert report["touched"] == []
    assert set(report["loaded"]) & FORBIDDEN == set()
