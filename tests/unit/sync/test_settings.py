"""[sync] in agent.toml: defaults from [filter], and errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import parse_config
from onprem_agent.sync.settings import SYNC

BASE = {"cluster": "prod", "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
        "checkpoint": {"store": "dynamodb", "table": "state"},
        "filter": {"cover_dirs": ["/data"], "ignore_patterns": ["_COPYING_$"]}}


def settings(**sync):
    return parse_config(BASE | {"sync": sync}, Path("/etc/hdfs-events/agent.toml")).read(SYNC)


def test_paths_and_patterns_default_to_the_filter_and_the_prefix_ends_with_a_slash():
    s = settings(destination="s3://replica/mirror/", table="sync")
    assert (s.bucket, s.prefix, s.destination) == ("replica", "mirror/", "s3://replica/mirror/")
    # An upload in progress is never copied, whatever [filter] ships.
    assert s.paths == ("/data",) and s.ignore_patterns == ("_COPYING_$", r"\._COPYING_$")
    assert s.part_size == 8 * 1024 * 1024 and s.bandwidth_bytes_s == 0
    assert settings(destination="s3://replica", table="sync").prefix == ""


@pytest.mark.parametrize(("sync", "message"), [
    ({"table": "sync"}, "[sync] destination: required"),
    ({"destination": "replica/x", "table": "sync"}, "[sync] destination: must be s3://bucket"),
    ({"destination": "s3://r/p"}, "[sync] table: required"),
    ({"destination": "s3://r/p", "table": "t", "part_size_mb": 4},
     "[sync] part_size_mb: must be >= 5"),
    ({"destination": "s3://r/p", "table": "t", "preserve": ["acls"]},
     "[sync] preserve: 'acls' is not one of owner, group, permissions, replication, mtime"),
    ({"destination": "s3://r/p", "table": "t", "paths": ["data"]},
     "[sync] paths: 'data' is not an absolute HDFS path"),
    ({"destination": "s3://r/p", "table": "t", "windows_ms": 1}, "[sync] windows_ms: unknown key"),
    ({"destination": "s3://r/p", "table": "t", "part_size_mb": 64, "buffer_mb": 32},
     "[sync] buffer_mb: must be at least part_size_mb (64) and multipart_threshold_mb (8), "
     "got 32"),
    ({"destination": "s3://r/p", "table": "t", "buffer_mb": 0}, "[sync] buffer_mb: must be >= 1"),
])
def test_mistakes_name_the_file_and_the_key(sync, message):
    with pytest.raises(ConfigError, match=r"^agent\.toml: " + _re(message)):
        settings(**sync)


def test_sync_without_a_section_says_what_it_needs():
    with pytest.raises(ConfigError, match=r"agent\.toml: \[sync\]: required for `sync`"):
        parse_config(BASE, Path("agent.toml")).read(SYNC)


def _re(text: str) -> str:
    import re

    return re.escape(text)
