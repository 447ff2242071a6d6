"""`hdfs-events-agent translate` on good and bad input, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onprem_agent.cli import main
from tests.unit.translate.oev import add, document, record, rename_old, write

AGENT = Path(sys.executable).parent / "hdfs-events-agent"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["translate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_the_console_script_prints_one_json_event_per_line(edits_sample: Path) -> None:
    done = subprocess.run([str(AGENT), "translate", str(edits_sample), "--cluster", "prod",
                           "--from-txid", "56", "--to-txid", "66"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(e["txid"], e["index"], e["type"]) for e in events] == [
        (57, 0, "APPEND"), (57, 1, "UNLINK"), (57, 2, "UNLINK"), (57, 3, "CLOSE"),
        (58, 0, "CREATE"), (65, 0, "CLOSE"), (66, 0, "TRUNCATE")]
    assert {e["cluster"] for e in events} == {"prod"}
    assert done.stderr == ""


def test_truncated_file_fails_naming_file_position_and_last_txid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = document(record("OP_RENAME_OLD", 7, rename_old()), record("OP_RENAME_OLD", 8,
                                                                      rename_old()))
    path = tmp_path / "cut.xml"
    path.write_text(text[: text.index("<TXID>8") + 20], encoding="utf-8")
    code, events, err = run(capsys, path)
    assert code == 1
    assert [e["txid"] for e in events] == [7]  # what came before the damage is printed
    assert str(path) in err and "line" in err and "column" in err and "after txid 7" in err


def test_mismatched_tag_inside_a_record_fails_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = record("OP_DELETE", 9, "<LENGTH>0</LENGTH><PATH>/x</PATHS><TIMESTAMP>1</TIMESTAMP>\n")
    path = write(tmp_path, record("OP_RENAME_OLD", 8, rename_old()), bad)
    code, _, err = run(capsys, path)
    assert code == 1
    line = path.read_text().splitlines().index("<LENGTH>0</LENGTH><PATH>/x</PATHS>"
                                              "<TIMESTAMP>1</TIMESTAMP>") + 1
    assert f"line {line}" in err and "after txid 8" in err and str(path) in err


def test_malformed_block_op_is_caught_too(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = record("OP_ALLOCATE_BLOCK_ID", 9, "<BLOCK_ID>1</BLOCK_ID\n")
    code, _, err = run(capsys, write(tmp_path, record("OP_RENAME_OLD", 8, rename_old()), bad,
                                     record("OP_RENAME_OLD", 10, rename_old())))
    assert code == 1 and "malformed XML" in err and "after txid 8" in err


def test_not_an_edit_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "other.xml"
    path.write_text("<configuration><property/></configuration>", encoding="utf-8")
    code, _, err = run(capsys, path)
    assert code == 1 and str(path) in err and "EDITS" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, tmp_path / "nope.xml")
    assert code == 1 and "nope.xml" in err


@pytest.mark.parametrize(("opcode", "body", "field"), [
    ("OP_RENAME_OLD", "<LENGTH>0</LENGTH><SRC>/a</SRC><TIMESTAMP>5</TIMESTAMP>\n", "DST"),
    ("OP_DELETE", "<LENGTH>0</LENGTH><PATH>/a</PATH><TIMESTAMP>soon</TIMESTAMP>\n", "TIMESTAMP"),
    ("OP_ADD", add().replace("<USERNAME>alice</USERNAME>", ""), "PERMISSION_STATUS/USERNAME"),
    ("OP_ADD", add().replace("<ATIME>999</ATIME>", ""), "ATIME"),
    ("OP_CLOSE", add(blocks="<BLOCK><BLOCK_ID>1</BLOCK_ID></BLOCK>"), "NUM_BYTES"),
    ("OP_APPEND", "<PATH>/a</PATH><CLIENT_NAME>c</CLIENT_NAME>\n", "NEWBLOCK"),
    ("OP_SET_XATTR", "<SRC>/a</SRC><XATTR><NAME>k</NAME></XATTR>\n", "NAMESPACE"),
    ("OP_SET_XATTR", "<SRC>/a</SRC><XATTR><NAMESPACE>USR</NAMESPACE><NAME>k</NAME></XATTR>\n",
     "NAMESPACE"),
    ("OP_SET_ACL", "<SRC>/a</SRC><ENTRY><SCOPE>ACCESS</SCOPE><TYPE>USER</TYPE>"
                   "<PERM>rwz</PERM></ENTRY>\n", "PERM"),
    ("OP_CONCAT_DELETE", "<TRG>/t</TRG><TIMESTAMP>1</TIMESTAMP>\n", "SOURCES"),
    ("OP_TRUNCATE", "<SRC>/a</SRC><TIMESTAMP>1</TIMESTAMP>\n", "NEWLENGTH"),
    ("OP_MKDIR", "<PATH>/d</PATH><TIMESTAMP>1</TIMESTAMP>\n", "PERMISSION_STATUS"),
])
def test_a_namespace_op_missing_a_needed_field_names_file_txid_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], opcode: str, body: str,
        field: str) -> None:
    path = write(tmp_path, record("OP_RENAME_OLD", 41, rename_old()), record(opcode, 42, body))
    code, events, err = run(capsys, path)
    assert code == 1
    assert [e["txid"] for e in events] == [41]
    assert str(path) in err and "txid 42" in err and f"field {field}" in err and opcode in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_opcodes_yield_nothing_and_are_reported_once_with_counts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path, record("OP_RENAME_OLD", 1, rename_old()),
        record("OP_FROM_THE_FUTURE", 2, "<PATH>/x</PATH>\n"),
        record("OP_ADD_ERASURE_CODING_POLICY", 3, "<CODEC>rs</CODEC>\n"),  # known: no event
        record("OP_FROM_THE_FUTURE", 4, "<SOMETHING><NEW/></SOMETHING>\n"),
        record("OP_SET_QUOTA_BY_STORAGETYPE", 5, "<SRC>/d</SRC>\n"),
        record("OP_DELETE", 6, "<LENGTH>0</LENGTH><PATH>/b</PATH><TIMESTAMP>9</TIMESTAMP>\n"))
    code, events, err = run(capsys, path)
    assert code == 0
    assert [(e["txid"], e["type"]) for e in events] == [(1, "RENAME"), (6, "UNLINK")]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "OP_FROM_THE_FUTURE x2" in lines[0] and str(path) in lines[0]
    assert "ERASURE" not in err and "STORAGETYPE" not in err


def test_a_bad_cluster_name_is_a_usage_error(edits_sample: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, events, err = run(capsys, edits_sample, "--cluster", "prod cluster")
    assert code == 2 and events == [] and "--cluster" in err
