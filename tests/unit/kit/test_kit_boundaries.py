"""demo/, bench/ and tests/ stand on one kit, tests/kit/, and never import each other (issue 34
item 4). The rules, read from every import of every .py file under the three (at any depth: a
function's own import, one under `if TYPE_CHECKING`, `importlib.import_module("...")`, and a
`[python, "-m", "module"]` argv, which runs a module as surely as an import):

1. tests/kit/ imports the product (hdfs_events, onprem_agent, lambdas, glue_jobs, stacks,
   hdfs_events_cli, app) and itself only: never demo, bench, or tests.* outside the kit.
2. demo/ imports the product and tests.kit only: never bench, or tests.* outside the kit.
3. bench/ imports the product and tests.kit only: never demo, or tests.* outside the kit.
4. tests/ outside the kit imports demo or bench only in the modules whose subject is that
   package (SUBJECTS): every other test gets what it needs from the kit.

The files are parsed, never imported: the test costs well under a second."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KIT = "tests/kit/"
SUBJECTS = {
    # Tests whose subject is the demo itself: its report, its HTML in a browser.
    "demo": ("tests/unit/demo/", "tests/e2e/test_report_in_browser.py"),
    # Tests whose subject is bench code: the smoke of every bench, and the benches' own logic.
    "bench": ("tests/bench/", "tests/unit/bench/"),
}


def _area(path: str) -> str:
    """kit, demo, bench or tests (tests outside the kit), of a repo-relative path or a module."""
    if path.startswith(KIT):
        return "kit"
    return path.split("/", 1)[0]


def _package_of(module: str) -> str | None:
    """The area a dotted module belongs to; None for the product and third parties."""
    top = module.split(".", 1)[0]
    if top == "tests":
        return "kit" if module == "tests.kit" or module.startswith("tests.kit.") else "tests"
    return top if top in ("demo", "bench") else None


def _module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def imports(path: str, source: str) -> Iterator[tuple[int, str]]:
    """(line, dotted module) of every import of `source` (the file at repo-relative `path`)."""
    package = _module_of(path).rsplit(".", 1)[0] if not path.endswith("__init__.py") \
        else _module_of(path)
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's own package up
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base == "tests":  # `from tests import kit` imports tests.kit: names are modules
                yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)
            else:
                yield node.lineno, base
        elif isinstance(node, ast.Call) and _is_import_call(node) and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            yield node.lineno, node.args[0].value
        elif isinstance(node, ast.List | ast.Tuple):
            items = node.elts
            for flag, module in itertools.pairwise(items):
                if isinstance(flag, ast.Constant) and flag.value == "-m" \
                        and isinstance(module, ast.Constant) and isinstance(module.value, str):
                    yield module.lineno, module.value


def _is_import_call(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") \
        or (isinstance(func, ast.Name) and func.id in ("__import__", "import_module"))


def broken_rules(path: str, source: str) -> list[str]:
    """One line per import of `source` that breaks a rule: file, line, module and the rule."""
    area, out = _area(path), []
    for line, module in imports(path, source):
        target = _package_of(module)
        if target is None or target == area or target == "kit":
            continue
        if area == "kit":
            rule = "1: tests/kit imports the product and itself only"
        elif area == "demo":
            rule = "2: demo imports the product and tests.kit only"
        elif area == "bench":
            rule = "3: bench imports the product and tests.kit only"
        elif path.startswith(SUBJECTS[target]):
            continue
        else:
            rule = (f"4: a test imports {target} only when {target} is its subject "
                    f"({', '.join(SUBJECTS[target])}); others take it from tests.kit")
        out.append(f"{path}:{line}: imports {module}: rule {rule}")
    return out


def _files() -> list[Path]:
    return sorted(p for top in ("demo", "bench", "tests") for p in (REPO / top).rglob("*.py"))


def test_demo_bench_and_tests_import_the_kit_and_never_each_other() -> None:
    files = _files()
    areas = {_area(p.relative_to(REPO).as_posix()) for p in files}
    assert areas == {"kit", "demo", "bench", "tests"} and len(files) > 300
    broken = [message for p in files
              for message in broken_rules(p.relative_to(REPO).as_posix(),
                                          p.read_text(encoding="utf-8"))]
    assert broken == [], "\n".join(broken)


@pytest.mark.parametrize(("path", "source", "line", "rule"), [
    ("tests/kit/chain.py", "def f():\n    from demo.lake import build_report\n", 2, 1),
    ("tests/kit/x.py", "from tests.conftest import EDITS\n", 1, 1),
    ("tests/kit/x.py", "from .. import conftest\n", 1, 1),
    ("demo/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bench.ship\n",
     3, 2),
    ("demo/x.py", "from tests.e2e.conftest import ChainRun\n", 1, 2),
    ("bench/x.py", "import importlib\nimportlib.import_module('demo.lake')\n", 2, 3),
    ("bench/x.py", "from tests import infra\n", 1, 3),
    ("tests/e2e/conftest.py", "from demo.lake import build_report\n", 1, 4),
    ("tests/infra/x.py", "import sys\ncmd = [sys.executable, '-m', 'bench.ship']\n", 2, 4),
])
def test_an_import_across_the_boundary_is_named_with_its_file_line_and_rule(
        path: str, source: str, line: int, rule: int) -> None:
    [message] = broken_rules(path, source)
    assert message.startswith(f"{path}:{line}: imports ") and f": rule {rule}: " in message


@pytest.mark.parametrize(("path", "source"), [
    ("tests/kit/x.py", "from tests.kit.hadoop.cluster import HdfsCluster\nimport hdfs_events\n"),
    ("demo/x.py", "from demo.report import write_html\nfrom tests.kit import local_chain\n"),
    ("bench/x.py", "from bench import OUT_DIR\ncmd = ['-m', 'tests.kit.lambda_process']\n"),
    ("tests/unit/demo/test_x.py", "from demo.lake import lake_differences\n"),
    ("tests/bench/test_x.py", "from bench import run_all\n"),
    ("tests/e2e/test_x.py", "from tests.infra.synth import synthesized\n"),
])
def test_imports_within_the_rules_pass(path: str, source: str) -> None:
    assert broken_rules(path, source) == []
