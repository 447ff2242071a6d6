"""The systemd unit and its example environment file."""

from __future__ import annotations

import re
from pathlib import Path

from onprem_agent.cli import COMMANDS

DEPLOY = Path(__file__).resolve().parents[3] / "onprem_agent" / "deploy"


def unit_settings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (DEPLOY / "hdfs-events-agent.service").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def test_unit_restarts_always_except_after_a_gap_stop_and_runs_the_run_command():
    s = unit_settings()
    assert s["Restart"] == ["always"]
    assert s["RestartPreventExitStatus"] == ["3"]  # commands.run.EXIT_GAP
    exec_start = s["ExecStart"][0].split()
    assert exec_start[0].endswith("/hdfs-events-agent") and exec_start[1] == "run"
    assert "run" in COMMANDS


def test_unit_is_hardened_and_unprivileged():
    s = unit_settings()
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp", "PrivateDevices",
                "ProtectKernelTunables", "RestrictSUIDSGID", "LockPersonality"):
        assert s[key] == ["true"], key
    assert s["ProtectSystem"] == ["strict"] and s["CapabilityBoundingSet"] == [""]
    assert s["User"] == ["hdfs-events"] and s["UMask"] == ["0077"]


def test_example_environment_holds_no_secrets():
    text = (DEPLOY / "hdfs-events-agent.env.example").read_text()
    assignments = [line.split("=", 1)[0] for line in text.splitlines()
                   if line and not line.startswith("#")]
    assert "HADOOP_CONF_DIR" in assignments and "JAVA_HOME" in assignments
    assert not [a for a in assignments
                if re.search(r"SECRET|PASSWORD|TOKEN|ACCESS_KEY|SESSION", a)]
