"""The sync's systemd unit: its own unit beside the agent's, running `sync run`."""

from __future__ import annotations

from pathlib import Path

from onprem_agent.cli import COMMANDS

UNIT = Path(__file__).resolve().parents[3] / "onprem_agent" / "deploy" / "hdfs-events-sync.service"


def test_the_unit_runs_sync_run_restarts_always_and_leaves_time_to_finish_a_window():
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if line.strip() and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    assert settings["ExecStart"][0].split()[1:4] == ["sync", "run", "--config"]
    assert "sync" in COMMANDS
    assert settings["Restart"] == ["always"] and "RestartPreventExitStatus" not in settings
    assert int(settings["TimeoutStopSec"][0]) >= 60
    assert settings["NoNewPrivileges"] == ["true"] and settings["User"] == ["hdfs-events"]
