"""distcp runs as an argument list; failures and timeouts become CopyFailed with a reason."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from hdfs_events.copy_request import CopyMode
from onprem_agent.copy_worker.distcp import DistcpRunner, distcp_argv
from onprem_agent.copy_worker.failures import CopyFailed


@pytest.mark.parametrize(("mode", "option"), [(CopyMode.OVERWRITE, "-overwrite"),
                                              (CopyMode.UPDATE, "-update"),
                                              (CopyMode.SKIP_EXISTING, "-update")])
def test_argv_has_one_entry_per_value(mode: CopyMode, option: str) -> None:
    argv = distcp_argv(["hadoop", "distcp", "-m", "4"], mode, "s3a://b/p q/", "/data/x y",
                       Path("/tmp/f.txt"))
    assert argv == ["hadoop", "distcp", "-m", "4", option, "-filters", "/tmp/f.txt",
                    "s3a://b/p q/", "/data/x y"]


def test_metacharacters_reach_the_program_verbatim_not_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    out = DistcpRunner(timeout_s=30)([sys.executable, "-c", "import sys; print(sys.argv[1:])",
                                      f"; touch {marker}", f"$(touch {marker})"])
    assert "touch" in out
    assert not marker.exists()


def test_non_zero_exit_is_a_failure_with_the_last_output() -> None:
    with pytest.raises(CopyFailed, match=r"status 3: .*No space left"):
        DistcpRunner(timeout_s=30)([sys.executable, "-c",
                                    "import sys; print('ERROR No space left'); sys.exit(3)"])


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(60)\n")
    # 3 s: the script's interpreter must have started its child and written its pid first.
    with pytest.raises(CopyFailed, match="still running after 3 s"):
        DistcpRunner(timeout_s=3)([sys.executable, "-c", script])
    child = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def test_missing_program_is_a_failure() -> None:
    with pytest.raises(CopyFailed, match="not found"):
        DistcpRunner(timeout_s=5)(["no-such-hadoop-here", "distcp"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_failure_reason_is_the_exception_not_its_stack_frames(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    frames = "".join(f"\tat org.apache.hadoop.tools.DistCp.run(DistCp.java:{i})\n"
                     for i in range(40))
    script.write_text("import sys\nsys.stderr.write(" + repr(
        "ERROR tools.DistCp: Invalid input: \norg.apache.hadoop.tools.CopyListing$"
        "InvalidInputException: Cannot copy s3a://b/p, which is not a file to /d\n"
        + frames + "\t... 3 more\n") + ")\nsys.exit(255)\n")
    with pytest.raises(CopyFailed) as failed:
        DistcpRunner(timeout_s=30)([sys.executable, str(script)])
    assert "status 255" in failed.value.reason
    assert "InvalidInputException: Cannot copy s3a://b/p" in failed.value.reason
    assert "DistCp.java" not in failed.value.reason
