"""The audit tailer on plain files rotated the way log4j's RollingFileAppender rotates them
(`rollover` below: close, rename .N -> .N+1 ... live -> .1, drop past MaxBackupIndex, new live
file), and the shipper's choice of lines and objects. The NameNode doing it for real is
tests/integration/agent/test_audit_shipping.py."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hdfs_events.audit import TimeFormat
from onprem_agent.audit.logfiles import AuditTailer, Chunk, RotatingLog
from onprem_agent.audit.metrics import TOP_DENIED_USERS, AuditCounters
from onprem_agent.audit.position import TailPosition, load_position, save_position
from onprem_agent.audit.shipper import build_object, is_shipped

NAME = "hdfs-audit.log"


def rollover(directory: Path, backups: int = 20) -> None:
    """log4j 1.x RollingFileAppender.rollOver: delete .backups, rename .i -> .i+1, live -> .1."""
    (directory / f"{NAME}.{backups}").unlink(missing_ok=True)
    for i in range(backups - 1, 0, -1):
        p = directory / f"{NAME}.{i}"
        if p.exists():
            p.rename(directory / f"{NAME}.{i + 1}")
    (directory / NAME).rename(directory / f"{NAME}.1")
    (directory / NAME).touch()


def write(directory: Path, *lines: str, end: str = "\n") -> None:
    with (directory / NAME).open("a") as f:
        f.write("".join(line + end for line in lines))


def read_all(tailer: AuditTailer, max_lines: int = 1000) -> list[str]:
    out = []
    while (chunk := tailer.read(max_lines)) is not None:
        out += [text.decode() for _, text in chunk.lines]
    return out


def test_only_lines_ending_in_a_newline_are_read(tmp_path: Path) -> None:
    write(tmp_path, "a1", "a2")
    write(tmp_path, "a3-half", end="")
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    assert read_all(tailer) == ["a1", "a2"]
    write(tmp_path, "-done")
    assert read_all(tailer) == ["a3-half-done"]


def test_rotations_while_reading_lose_and_repeat_nothing(tmp_path: Path) -> None:
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    write(tmp_path, "first")
    seen = read_all(tailer)
    expected = ["first"]
    for n in range(5):
        write(tmp_path, f"{n}-before", f"{n}-last")
        expected += [f"{n}-before", f"{n}-last"]
        rollover(tmp_path)
        if n % 2:  # twice in a row sometimes, before the tailer looks
            rollover(tmp_path)
            write(tmp_path, f"{n}-extra")
            rollover(tmp_path)
            expected.append(f"{n}-extra")
        write(tmp_path, f"{n}-new")
        expected.append(f"{n}-new")
        seen += read_all(tailer, max_lines=1)
    assert seen == expected


def test_a_partial_line_at_the_end_of_a_rotated_file_is_read_whole(tmp_path: Path) -> None:
    write(tmp_path, "a1")
    write(tmp_path, "a2-cut", end="")
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    assert read_all(tailer) == ["a1"]
    rollover(tmp_path)
    write(tmp_path, "b1")
    assert read_all(tailer) == ["a2-cut", "b1"]


def test_a_restart_finds_its_file_by_identity_among_the_rotated_names(tmp_path: Path) -> None:
    write(tmp_path, "a1", "a2", "a3")
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    chunk = tailer.read(2)
    assert chunk is not None and [t for _, t in chunk.lines] == [b"a1", b"a2"]
    position = tailer.position
    tailer.close()
    rollover(tmp_path)
    write(tmp_path, "b1")
    rollover(tmp_path)
    write(tmp_path, "c1")
    # The file of the position is now hdfs-audit.log.2: the rest of it, then .1, then live.
    restarted = AuditTailer(RotatingLog(tmp_path, NAME), position)
    assert read_all(restarted) == ["a3", "b1", "c1"]


def test_a_file_keeps_its_id_when_renamed_and_a_new_file_gets_another(tmp_path: Path) -> None:
    write(tmp_path, "2026-11-26 12:00:00,000 same first line")
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    first = tailer.read(10)
    assert first is not None
    rollover(tmp_path)
    write(tmp_path, "2026-11-26 12:00:00,000 same first line")
    second = tailer.read(10)
    # Same first bytes, another inode (the renamed file is still there): another identity.
    assert second is not None and second.file_id != first.file_id
    assert first.file_id.split("-")[1] == second.file_id.split("-")[1]


def test_when_the_positions_file_was_deleted_it_goes_on_from_the_oldest(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, "a1", "a2")
    tailer = AuditTailer(RotatingLog(tmp_path, NAME), None)
    tailer.read(1)
    position = tailer.position
    tailer.close()
    rollover(tmp_path, backups=1)
    write(tmp_path, "b1")
    rollover(tmp_path, backups=1)  # MaxBackupIndex=1: the file of the position is deleted
    write(tmp_path, "c1")
    restarted = AuditTailer(RotatingLog(tmp_path, NAME), position)
    assert read_all(restarted) == ["b1", "c1"]
    assert "lines after offset" in caplog.text


def test_the_position_file_round_trips_and_names_itself_when_damaged(tmp_path: Path) -> None:
    path = tmp_path / "state" / "audit-position.json"
    assert load_position(path) is None
    save_position(path, TailPosition("12-ab", 4096))
    assert load_position(path) == TailPosition("12-ab", 4096)
    path.write_text("{")
    with pytest.raises(RuntimeError, match=str(path)):
        load_position(path)


# --- which lines go, in which object -----------------------------------------------------------

LINE = ("2026-11-26 12:31:14,174 INFO FSNamesystem.audit: allowed={allowed}\tugi={user} "
        "(auth:SIMPLE)\tip=/127.0.0.1\tcmd={cmd}\tsrc={src}\tdst=null\tperm=null\tproto=rpc")


def chunk(*lines: str, first_offset: int = 100) -> Chunk:
    out, offset = [], first_offset
    for line in lines:
        out.append((offset, line.encode()))
        offset += len(line) + 1
    return Chunk("7-beef", out, offset)


def test_reads_go_only_under_read_paths_denials_and_bad_lines_always() -> None:
    lines = [LINE.format(allowed="true", user="alice", cmd="open", src="/data/x"),
             LINE.format(allowed="true", user="alice", cmd="open", src="/finance/q1"),
             LINE.format(allowed="true", user="alice", cmd="listStatus", src="/financed"),
             LINE.format(allowed="false", user="eve", cmd="open", src="/data/y"),
             LINE.format(allowed="true", user="alice", cmd="delete", src="/data/z"),
             "a line log4j never wrote"]
    obj = build_object("prod", "nn1", chunk(*lines), read_paths=["/finance"],
                       time_format=TimeFormat(), now_ms=lambda: 0)
    assert [(r.cmd, r.src) for r in obj.records] == [
        ("open", "/finance/q1"), ("open", "/data/y"), ("delete", "/data/z"), (None, None)]
    assert obj.end == TailPosition("7-beef", chunk(*lines).end)
    assert obj.key == ("raw-audit/cluster=prod/dt=2026-11-26/hour=12/nn1-7-beef-100.jsonl.gz")
    assert [json.loads(x)["offset"] for x in gzip.decompress(obj.body).splitlines()] == [
        r.offset for r in obj.records]
    assert all(is_shipped(r, ["/finance"]) for r in obj.records)


def test_the_same_lines_make_the_same_object_bytes_and_reads_alone_make_none() -> None:
    lines = [LINE.format(allowed="true", user="bob", cmd="mkdirs", src="/d")] * 3
    a, b = (build_object("prod", "nn1", chunk(*lines), read_paths=[], time_format=TimeFormat(),
                         now_ms=lambda: 0) for _ in range(2))
    assert (a.key, a.body) == (b.key, b.body)
    reads = build_object("prod", "nn1", chunk(LINE.format(allowed="true", user="bob",
                                                          cmd="getfileinfo", src="/d")),
                         read_paths=[], time_format=TimeFormat(), now_ms=lambda: 0)
    assert reads.key is None and reads.end.offset > 100


def test_denials_are_counted_by_command_and_by_the_top_users_only() -> None:
    users = [f"u{i:02d}" for i in range(TOP_DENIED_USERS + 5)]
    lines = [LINE.format(allowed="false", user=u, cmd="create", src="/x")
             for i, u in enumerate(users) for _ in range(len(users) - i)]
    obj = build_object("prod", "nn1", chunk(*lines), read_paths=[], time_format=TimeFormat(),
                       now_ms=lambda: 0)
    counters = AuditCounters()
    counters.count(obj.records)
    data = counters.data("prod", now_s=0)
    by_dims = {tuple(d["Value"] for d in m["Dimensions"][1:]): m["Value"] for m in data
               if m["MetricName"] == "DeniedAccess"}
    assert by_dims[("create",)] == len(lines)
    named = {k[0] for k in by_dims if k[0].startswith("u")}
    assert named == set(users[:TOP_DENIED_USERS])
    assert by_dims[("(other)",)] == sum(range(1, 6))
