"""Every format two components share is spelt in one module of the contract (issue 34): a key
layout written by one process and parsed by another cannot drift apart if only one module
holds its literal. Checked on the string literals of every product package (docstrings and
comments may describe a format; only code spells it)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PRODUCT = ("hdfs_events", "hdfs_events_cli", "lambdas", "glue_jobs", "stacks", "onprem_agent")
# (the format, a pattern of its literal, the one module that may spell it)
FORMATS = (
    ("the lake's partitions (raw, curated, audit, fsimage): cluster=<c>/...",
     r"cluster=[{(\[][^ ]*/", "hdfs_events/lake_layout.py"),
    ("a raw object's hour: .../hour=<HH>/<name>", r"hour=", "hdfs_events/lake_layout.py"),
    ("an fsimage's folder: .../txid=<t>/", r"txid=[{(\\]", "hdfs_events/lake_layout.py"),
    ("the sequencer's sort keys: <end, 20 digits>..., <received ms, 15 digits>...",
     r":0(20|15)d", "hdfs_events/sequencer_items.py"),
    ("the consumer's quarantine records: quarantine/ingest/dt=<d>/<name>.json",
     r"(ingest/|PREFIX\})dt=", "hdfs_events/quarantine.py"),
)


def _code_strings(path: Path) -> list[str]:
    """The string literals of a module (f-strings whole), docstrings left out."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(path.read_text("utf-8")).readline)
              if t.type not in (tokenize.NL, tokenize.COMMENT)]
    found = []
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.STRING:
            continue
        before = next((t for t in reversed(tokens[:i])
                       if t.type not in (tokenize.INDENT, tokenize.DEDENT)), None)
        alone = (before is None or before.type == tokenize.NEWLINE) and (
            i + 1 < len(tokens) and tokens[i + 1].type == tokenize.NEWLINE)
        if not alone:  # a string statement on its own is a docstring
            found.append(tok.string)
    return found


def _spelt_in(pattern: str) -> set[str]:
    regex = re.compile(pattern)
    return {str(path.relative_to(REPO)) for package in PRODUCT
            for path in (REPO / package).rglob("*.py")
            if any(regex.search(s) for s in _code_strings(path))}


def test_each_shared_format_is_spelt_in_one_contract_module() -> None:
    wrong = {what: sorted(where) for what, pattern, owner in FORMATS
             if (where := _spelt_in(pattern)) != {owner}}
    assert wrong == {}


def test_the_check_finds_a_format_spelt_twice(tmp_path: Path) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text('"""hour= in a docstring is fine."""\n'
                    'KEY = f"raw/{c}/hour={h}/{n}"\n', encoding="utf-8")
    assert _code_strings(copy) == ['f"raw/{c}/hour={h}/{n}"']
