"""[audit] in agent.toml (onprem_agent/audit/settings.py) and its systemd unit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onprem_agent.agent_toml import ConfigError
from onprem_agent.audit.settings import AUDIT
from onprem_agent.config import parse_config

DEPLOY = Path(__file__).resolve().parents[3] / "onprem_agent" / "deploy"
# What a service does and when it ends; every other [Service] line is the agent's sandbox.
LIFECYCLE = {"Type", "ExecStart", "Restart", "RestartSec", "RestartPreventExitStatus", "KillSignal",
             "TimeoutStopSec"}

BASE = {"cluster": "prod", "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
        "checkpoint": {"path": "cp.json"}}


def settings(**audit: Any) -> Any:
    doc = {**BASE, "audit": {"log_dir": "/var/log/hadoop/hdfs", "bucket": "lake",
                             "state_file": "audit.json", **audit}}
    return parse_config(doc, Path("/etc/hdfs-events/agent.toml")).read(AUDIT)


def test_defaults_and_paths_relative_to_the_config_file() -> None:
    s = settings(host="nn1.example.com", read_paths=["/data/finance/"])
    assert (s.file, s.host, s.read_paths, s.flush_interval_s) == (
        "hdfs-audit.log", "nn1.example.com", ("/data/finance",), 10)
    assert s.state_file == Path("/etc/hdfs-events/audit.json")
    assert s.time_format.strptime == "%Y-%m-%d %H:%M:%S,%f" and str(s.time_format.zone) == "UTC"


@pytest.mark.parametrize(("audit", "message"), [
    ({"bucket": None}, r"\[audit\] bucket: required"),
    ({"state_file": None}, r"\[audit\] state_file: required"),
    ({"read_paths": ["data"]}, r"\[audit\] read_paths: 'data' is not an absolute HDFS path"),
    ({"timezone": "Mars/Olympus"}, r"\[audit\] timezone: 'Mars/Olympus' is not an IANA"),
    ({"time_format": "%Q"}, r"\[audit\] time_format: '%Q' is not a usable strptime"),
    ({"host": "nn1/x"}, r"\[audit\] host: 'nn1/x' is not a host name"),
    ({"file": "logs/hdfs-audit.log"}, r"\[audit\] file: .* must be a file name"),
    ({"max_batch_lines": 0}, r"\[audit\] max_batch_lines: must be >= 1"),
    ({"flush_every": 3}, r"\[audit\] flush_every: unknown key"),
])
def test_a_bad_value_is_refused_naming_the_key(audit: dict[str, Any], message: str) -> None:
    values = {k: v for k, v in audit.items() if v is not None}
    doc = {**BASE, "audit": {"log_dir": "/l", "bucket": "lake", "state_file": "a.json", **values}}
    for key in (k for k, v in audit.items() if v is None):
        del doc["audit"][key]
    with pytest.raises(ConfigError, match=message):
        parse_config(doc, Path("agent.toml")).read(AUDIT)


def test_without_the_section_audit_run_says_what_it_needs() -> None:
    with pytest.raises(ConfigError, match=r"\[audit\]: required for `audit run`"):
        parse_config(BASE, Path("agent.toml")).read(AUDIT)


def service_lines(name: str) -> list[tuple[str, str]]:
    """The [Service] section's Key=Value lines, as systemd reads them."""
    lines, section = [], ""
    for raw in (DEPLOY / name).read_text().splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif line and line[0] not in "#;" and section == "[Service]":
            key, _, value = line.partition("=")
            lines.append((key.strip(), value.strip()))
    return lines


def test_the_unit_runs_audit_under_the_agents_sandbox() -> None:
    unit = service_lines("hdfs-events-audit.service")
    (exec_start,) = [v for k, v in unit if k == "ExecStart"]
    assert exec_start.split()[1:3] == ["audit", "run"]
    assert sorted(x for x in unit if x[0] not in LIFECYCLE) == sorted(
        x for x in service_lines("hdfs-events-agent.service") if x[0] not in LIFECYCLE)
