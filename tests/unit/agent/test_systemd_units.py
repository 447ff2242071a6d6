"""The systemd units shipped in onprem_agent/deploy: the verify timer and service beside the
agent's, read the way systemd reads them (sections of Key=Value lines, repeatable keys)."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from onprem_agent.cli import COMMANDS
from stacks.settings import DeploySettings

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "onprem_agent" / "deploy"
Unit = dict[str, list[tuple[str, str]]]

# What a service does and when it ends, which differ by purpose; every other [Service] line
# (user, environment, limits, sandbox) must be the agent's own.
LIFECYCLE = {"Type", "ExecStart", "Restart", "RestartSec", "RestartPreventExitStatus",
             "KillSignal", "TimeoutStopSec", "TimeoutStartSec", "Nice"}


def read_unit(path: Path) -> Unit:
    unit: Unit = {}
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            unit.setdefault(section, [])
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not Key=Value: {raw!r}"
        unit[section].append((key.strip(), value.strip()))
    return unit


def one(unit: Unit, section: str, key: str) -> str:
    (value,) = [v for k, v in unit[section] if k == key]
    return value


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (quotes removed)."""
    values = {}
    for raw in path.read_text().splitlines():
        if raw.strip() and not raw.lstrip().startswith("#"):
            key, _, value = raw.partition("=")
            (values[key.strip()],) = shlex.split(value) or [""]
    return values


def expand(exec_start: str, env: dict[str, str]) -> list[str]:
    """ExecStart's words with `$NAME` replaced by the value split at whitespace (systemd's
    rule for the unbraced form)."""
    words: list[str] = []
    for word in shlex.split(exec_start):
        if word.startswith("$") and not word.startswith("${"):
            words.extend(env.get(word[1:], "").split())
        else:
            words.append(word)
    return words


def test_verify_runs_the_packaged_entry_point_on_the_agents_config_and_the_envs_prefixes(
) -> None:
    agent = read_unit(DEPLOY / "hdfs-events-agent.service")
    verify = read_unit(DEPLOY / "hdfs-events-verify.service")
    env = env_file(DEPLOY / "hdfs-events-agent.env.example")
    agent_argv = shlex.split(one(agent, "Service", "ExecStart"))
    argv = expand(one(verify, "Service", "ExecStart"), env)

    # The same installed script as the agent's, and it is the package's entry point.
    assert argv[0] == agent_argv[0]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[Path(argv[0]).name] == "onprem_agent.cli:main"
    assert argv[1] == "verify"
    # The arguments parse with verify's own parser, on the agent's config file.
    parser = argparse.ArgumentParser()
    importlib.import_module(COMMANDS["verify"][0]).add_arguments(parser)
    args = parser.parse_args(argv[2:])
    agent_config = agent_argv[agent_argv.index("--config") + 1]
    assert args.config == Path(agent_config)
    assert args.prefix == ["/data", "/user"]
    assert one(verify, "Service", "EnvironmentFile") == one(agent, "Service", "EnvironmentFile")


def test_without_verify_args_the_command_line_is_refused() -> None:
    # An env file without VERIFY_ARGS must not verify some default tree instead.
    verify = read_unit(DEPLOY / "hdfs-events-verify.service")
    argv = expand(one(verify, "Service", "ExecStart"), {})
    parser = argparse.ArgumentParser()
    importlib.import_module(COMMANDS["verify"][0]).add_arguments(parser)
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(argv[2:])
    assert refused.value.code == 2


def test_verify_is_a_oneshot_run_as_the_agents_user_under_the_agents_sandbox() -> None:
    verify = read_unit(DEPLOY / "hdfs-events-verify.service")
    assert one(verify, "Service", "Type") == "oneshot"
    # A timer starts it; a restart after exit 1 (drift) would only repeat the walk.
    assert not [k for k, _ in verify["Service"] if k.startswith("Restart")]
    assert "Install" not in verify  # enabled through its timer, never by itself

    def sandbox(unit: Unit) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in unit["Service"] if k not in LIFECYCLE)

    expected = sandbox(read_unit(DEPLOY / "hdfs-events-agent.service"))
    assert ("User", "hdfs-events") in expected and ("ProtectSystem", "strict") in expected
    assert sandbox(verify) == expected
    assert sandbox(read_unit(DEPLOY / "hdfs-events-sync.service")) == expected


def _seconds(span: str) -> int:
    """A systemd time span of the forms these units use ("1h", "30min", "45s", "12h")."""
    units = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}
    total = 0
    for number, unit in re.findall(r"(\d+)\s*([a-z]+)", span):
        total += int(number) * units[unit]
    assert total, span
    return total


def test_timer_runs_verify_daily_catches_up_and_fits_the_missing_drift_alarm() -> None:
    timer = read_unit(DEPLOY / "hdfs-events-verify.timer")
    assert one(timer, "Timer", "Unit") == "hdfs-events-verify.service"
    assert (DEPLOY / "hdfs-events-verify.service").is_file()
    # Once a day at a fixed time of day (every day, any hour).
    assert re.fullmatch(r"\*-\*-\* \d{2}:\d{2}(:\d{2})?", one(timer, "Timer", "OnCalendar"))
    assert one(timer, "Timer", "Persistent") == "true"
    assert one(timer, "Install", "WantedBy") == "timers.target"
    # The longest wait between two runs' IndexDrift is a day plus the random delay, plus the
    # walk itself: the cloud-side alarm on missing IndexDrift must leave room for all three,
    # and at least as long again for the walk as the random delay.
    delay = _seconds(one(timer, "Timer", "RandomizedDelaySec"))
    missing_s = DeploySettings().index_drift_missing_hours * 3600
    assert 86400 + 2 * delay <= missing_s
    verify = read_unit(DEPLOY / "hdfs-events-verify.service")
    # A hung walk ends before the next day's run is due (a timer never starts an active unit).
    assert 3600 <= _seconds(one(verify, "Service", "TimeoutStartSec")) < 86400
