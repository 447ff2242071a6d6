"""Destination listing through `hadoop fs -ls -R`, parsed from FsShell's output format."""

from __future__ import annotations

import subprocess

import pytest

from onprem_agent.copy_worker.failures import CopyFailed
from onprem_agent.copy_worker.listing import (
    HadoopShellLister,
    distcp_temporaries,
    parse_ls_recursive,
)

# Real FsShell output shape (Hadoop 3.3), including an ACL '+' and a name with spaces.
LS_OUTPUT = """\
drwxr-xr-x   - etl hadoop          0 2026-11-20 10:15 /data/imports/x/sub
-rw-r--r--   3 etl hadoop    1048576 2026-11-20 10:15 /data/imports/x/sub/part-0
-rw-r--r--+  3 etl hadoop         17 2026-11-20 10:16 /data/imports/x/Q4 report.csv
-rw-r--r--   3 etl hadoop          0 2026-11-20 10:16 /data/imports/x/_SUCCESS
"""


def test_parse_keeps_files_by_relative_name_and_skips_directories() -> None:
    assert parse_ls_recursive(LS_OUTPUT, "/data/imports/x") == {
        "sub/part-0": 1048576, "Q4 report.csv": 17, "_SUCCESS": 0}


def test_parse_accepts_qualified_paths_and_ignores_noise() -> None:
    text = ("WARN util.NativeCodeLoader: Unable to load native-hadoop library\n"
            "-rw-r--r--   3 etl hadoop  5 2026-11-20 10:15 hdfs://ns1/data/imports/x/a\n"
            "-rw-r--r--   3 etl hadoop  6 2026-11-20 10:15 /data/imports/xy/not-mine\n")
    assert parse_ls_recursive(text, "/data/imports/x/") == {"a": 5}


def fake_run(code: int, stdout: str = "", stderr: str = ""):  # type: ignore[no-untyped-def]
    calls = []

    def run(argv, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(argv)
        assert "shell" not in kwargs
        return subprocess.CompletedProcess(argv, code, stdout, stderr)
    return run, calls


def test_lister_runs_the_configured_command_with_the_path_as_one_argument() -> None:
    run, calls = fake_run(0, LS_OUTPUT)
    lister = HadoopShellLister(["hdfs", "dfs", "-ls", "-R"], run=run)
    assert lister.list("/data/imports/x") == parse_ls_recursive(LS_OUTPUT, "/data/imports/x")
    assert calls == [["hdfs", "dfs", "-ls", "-R", "/data/imports/x"]]


def test_missing_destination_is_none() -> None:
    run, _ = fake_run(1, stderr="ls: `/data/imports/x': No such file or directory\n")
    assert HadoopShellLister(["hadoop", "fs", "-ls", "-R"], run=run).list("/data/imports/x") \
        is None


def test_other_listing_errors_fail_the_attempt() -> None:
    run, _ = fake_run(1, stderr="ls: Permission denied: user=etl, access=READ_EXECUTE\n")
    with pytest.raises(CopyFailed, match="Permission denied"):
        HadoopShellLister(["hadoop", "fs", "-ls", "-R"], run=run).list("/data/imports/x")


def test_missing_command_fails_the_attempt() -> None:
    with pytest.raises(CopyFailed, match="not found"):
        HadoopShellLister(["no-such-hadoop-here"]).list("/x")


def test_distcp_temporaries_are_found_at_any_depth_and_nothing_else() -> None:
    listing = {"part-0": 10, "sub/.distcp.tmp.attempt_local1_0001_m_000000_0.1795": 3,
               ".distcp.tmp.attempt_local1_0001_m_000000_0.1796": 0, ".hidden": 1,
               "distcp.tmp.x": 2}
    assert distcp_temporaries(listing) == [
        ".distcp.tmp.attempt_local1_0001_m_000000_0.1796",
        "sub/.distcp.tmp.attempt_local1_0001_m_000000_0.1795"]
    assert distcp_temporaries(None) == []


def test_remove_passes_each_path_as_one_argument_in_batches() -> None:
    run, calls = fake_run(0)
    names = [f"d/.distcp.tmp.{i}" for i in range(150)]
    HadoopShellLister(["hadoop", "fs", "-ls", "-R"], run=run).remove("/data/imports/x/", names)
    assert [len(argv) for argv in calls] == [105, 55]
    assert calls[0][:6] == ["hadoop", "fs", "-rm", "-f", "-skipTrash",
                            "/data/imports/x/d/.distcp.tmp.0"]


def test_failed_remove_fails_the_attempt() -> None:
    run, _ = fake_run(1, stderr="rm: Permission denied\n")
    with pytest.raises(CopyFailed, match="Permission denied"):
        HadoopShellLister(["hadoop", "fs", "-ls", "-R"], run=run).remove("/x", ["a"])
