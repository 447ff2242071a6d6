"""The [copy] section: defaults, and errors that name the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import load_config, parse_config
from onprem_agent.copy_worker.settings import COPY

BASE = {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/copy.fifo",
        "transfers_table": "transfers", "allowed_sources": ["s3://lake-exports/exports/"],
        "allowed_destinations": ["/data/imports/"]}
CONFIG = {"cluster": "prod-nn1", "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
          "checkpoint": {"path": "cp.json"}}


def parse(**changes: object):  # type: ignore[no-untyped-def]
    table = {**BASE, **changes}
    return parse_config({**CONFIG, "copy": {k: v for k, v in table.items() if v is not None}},
                        Path("/etc/hdfs-events/agent.toml")).read(COPY)


def test_minimal_section_gets_safe_defaults() -> None:
    settings = parse()
    assert settings.distcp_command == ("hadoop", "distcp")
    assert settings.list_command == ("hadoop", "fs", "-ls", "-R")
    assert settings.allowed_sources[0].prefix == "exports/"
    assert settings.allowed_destinations == ("/data/imports",)
    assert settings.heartbeat_s * 3 <= settings.visibility_timeout_s


@pytest.mark.parametrize(("changes", "key"), [
    ({"queue_url": None}, "queue_url"),
    ({"transfers_table": ""}, "transfers_table"),
    ({"allowed_sources": []}, "allowed_sources"),
    ({"allowed_sources": ["s3://lake-exports/../x/"]}, "allowed_sources"),
    ({"allowed_sources": ["/data/x"]}, "allowed_sources"),
    ({"allowed_destinations": None}, "allowed_destinations"),
    ({"allowed_destinations": ["data/imports"]}, "allowed_destinations"),
    ({"allowed_destinations": "/data/imports"}, "allowed_destinations"),
    ({"max_concurrent": 0}, "max_concurrent"),
    ({"max_concurrent": True}, "max_concurrent"),
    ({"visibility_timeout_s": 50_000}, "visibility_timeout_s"),
    ({"visibility_timeout_s": 30, "heartbeat_s": 20}, "heartbeat_s"),
    ({"retry_base_s": 100, "retry_max_s": 10}, "retry_base_s"),
    ({"poll_wait_s": 21}, "poll_wait_s"),
    ({"distcp_command": []}, "distcp_command"),
    ({"distcp_command": "hadoop distcp"}, "distcp_command"),
    ({"distcp_command": ["hadoop", "distcp", "-Dfs.s3a.secret.key=abc"]}, "distcp_command"),
    ({"distcp_command": ["hadoop", "distcp", "-Dfs.s3a.access.key=AKIA"]}, "distcp_command"),
    ({"notify_topic_arn": "my-topic"}, "notify_topic_arn"),
    ({"allowed_notify_topics": ["x"]}, "allowed_notify_topics"),
    ({"queue": "typo"}, "queue"),
])
def test_bad_setting_is_named_with_the_file(changes: dict, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(**changes)
    assert str(caught.value).startswith(f"agent.toml: [copy] {key}:"), str(caught.value)


def test_load_reads_the_copy_section_of_the_agent_config(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(Path(__file__).parents[3].joinpath(
        "onprem_agent", "examples", "copy-worker.toml").read_text())
    settings = load_config(path).read(COPY)
    assert settings.cluster == "prod-nn1"
    assert settings.max_concurrent == 2
    assert settings.allowed_destinations == ("/data/imports",)


def test_load_without_copy_section_says_so(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "c1"\n[sqs]\nqueue_url = "https://sqs.x/1/q.fifo"\n'
                    '[checkpoint]\npath = "cp.json"\n')
    with pytest.raises(ConfigError, match=r"no \[copy\] section"):
        load_config(path).read(COPY)


def test_load_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml"):
        load_config(tmp_path / "nope.toml")
