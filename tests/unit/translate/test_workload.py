"""The generated edit logs look like real ones and translate without errors."""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from pathlib import Path

import pytest

from onprem_agent.editlog import read_ops
from onprem_agent.translate import TranslationStats, translate_ops
from tests.kit.workload import DEFAULT_START_MS, write_edit_log

BLOCK_OPS = {"OP_ALLOCATE_BLOCK_ID", "OP_SET_GENSTAMP_V2", "OP_ADD_BLOCK", "OP_UPDATE_BLOCKS"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    path = tmp_path_factory.mktemp("w") / "edits.xml"
    summary = write_edit_log(path, ops=30_000, seed=5, start_txid=1000, mass_delete=500,
                             datasets=12)
    return path, summary


def test_it_translates_to_exactly_the_events_the_summary_promises(generated) -> None:
    path, summary = generated
    stats = TranslationStats()
    events = list(translate_ops(read_ops(path), "c1", stats=stats))
    assert stats.ops == summary.ops == 30_000
    assert len(events) == stats.events == summary.events
    assert not stats.unknown_opcodes
    ops = list(read_ops(path))
    assert [op.txid for op in ops] == list(range(1000, 31_000))
    assert Counter(op.opcode for op in ops) == summary.opcodes
    assert (ops[0].opcode, ops[-1].opcode) == ("OP_START_LOG_SEGMENT", "OP_END_LOG_SEGMENT")


def test_block_ops_dominate_and_every_namespace_op_appears(generated) -> None:
    _, summary = generated
    blocks = sum(n for op, n in summary.opcodes.items() if op in BLOCK_OPS)
    assert blocks / summary.ops > 0.55
    assert {"OP_ADD", "OP_CLOSE", "OP_APPEND", "OP_RENAME_OLD", "OP_RENAME", "OP_DELETE",
            "OP_MKDIR", "OP_SET_PERMISSIONS", "OP_SET_OWNER", "OP_TIMES", "OP_SET_REPLICATION",
            "OP_CONCAT_DELETE", "OP_TRUNCATE", "OP_SET_XATTR", "OP_SET_ACL",
            "OP_UPDATE_BLOCKS"} <= summary.opcodes.keys()


def test_writers_go_through_temporary_names_and_rename_into_datasets(generated) -> None:
    path, _ = generated
    renames = [e for e in translate_ops(read_ops(path), "c1") if e.type == "RENAME"]
    assert renames
    assert all("/_temporary/" in e.path or e.path.endswith(".tmp") for e in renames)
    assert all(e.dst_path.startswith("/data/") and "/dt=" in e.dst_path for e in renames)
    assert len({e.dst_path.rsplit("/dt=", 1)[0] for e in renames}) > 5  # many datasets


def test_timestamps_never_go_backwards(generated) -> None:
    path, _ = generated
    stamps = [e.timestamp for e in translate_ops(read_ops(path), "c1") if e.type in (
        "RENAME", "UNLINK", "CLOSE", "TRUNCATE")]
    assert stamps == sorted(stamps) and stamps[0] >= DEFAULT_START_MS


def test_the_mass_delete_is_one_burst_under_one_prefix(generated) -> None:
    path, summary = generated
    mass = summary.mass_delete
    burst = [e for e in translate_ops(read_ops(path), "c1", from_txid=mass.first_txid - 1,
                                      to_txid=mass.last_txid)]
    assert len(burst) == mass.count == 500 == mass.last_txid - mass.first_txid + 1
    assert all(e.type == "UNLINK" and e.path.startswith(mass.prefix + "/") for e in burst)
    assert burst[-1].timestamp - burst[0].timestamp < 500 * 4  # a few ms apart
    ops = [op for op in read_ops(path) if mass.first_txid <= op.txid <= mass.last_txid]
    assert len({op.data.findtext("RPC_CLIENTID") for op in ops}) == 1  # one client


def test_awkward_names_survive_oev_mangling(tmp_path: Path) -> None:
    path = tmp_path / "e.xml"
    write_edit_log(path, ops=60_000, seed=2)
    scratch = {e.path.rsplit("/", 1)[1] for e in translate_ops(read_ops(path), "c1")
               if e.path.startswith("/user/")}
    assert {"C:\\Users\\export.csv", "R&D <draft>.txt", "売上.parquet"} & scratch
    assert "\\005c;" in path.read_text(encoding="utf-8")


def test_same_seed_same_bytes_and_streams_work(tmp_path: Path) -> None:
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    write_edit_log(a, ops=3000, seed=9)
    write_edit_log(b, ops=3000, seed=9)
    buf = io.StringIO()
    write_edit_log(buf, ops=3000, seed=10)
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(a) == digest(b)
    assert buf.getvalue().encode() != a.read_bytes()


@pytest.mark.parametrize(("kwargs", "says"), [({"ops": 1}, "ops"), ({"ops": 10, "mass_delete": 9},
                                               "mass_delete"), ({"ops": 10, "start_txid": 0},
                                                                "start_txid"),
                                              ({"ops": 10, "users": ()}, "users")])
def test_bad_parameters_are_refused(tmp_path: Path, kwargs: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        write_edit_log(tmp_path / "x.xml", **kwargs)
