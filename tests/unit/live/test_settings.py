"""The live sections of agent.toml: defaults, and errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import parse_config
from onprem_agent.live.settings import load_live_settings

BASE = {"cluster": "prod", "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
        "checkpoint": {"store": "dynamodb", "table": "state"}}


def settings(**sections):
    return load_live_settings(parse_config(BASE | sections, Path("/etc/hdfs-events/agent.toml")))


def test_defaults_are_a_short_bounded_poll_and_snapshot_recovery():
    s = settings(filter={"cover_dirs": ["/data", "/user"]})
    assert s.inotify.poll_timeout_ms == 1000 and s.inotify.gap_policy == "snapshot"
    assert s.inotify.snapshot_paths == ("/data", "/user")  # the covered directories
    assert not s.lease.enabled and s.kerberos.enabled is False
    assert settings(lease={"duration_s": 30}).lease.table == "state"  # the agent-state table
    assert (s.hdfs.reconnect_initial_s, s.hdfs.reconnect_max_s) == (1, 30)
    # A first wait above the default cap raises the cap with it, not an error.
    assert settings(hdfs={"reconnect_initial_s": 60}).hdfs.reconnect_max_s == 60


@pytest.mark.parametrize(("sections", "message"), [
    ({"inotify": {"gap_policy": "skip"}},
     "[inotify] gap_policy: must be one of snapshot, stop, fsimage"),
    ({"inotify": {"poll_timeout_ms": 60_000}}, "[inotify] poll_timeout_ms: must be <= 30000"),
    ({"inotify": {"pol_timeout_ms": 5}}, "[inotify] pol_timeout_ms: unknown key"),
    ({"hdfs": {"uri": "http://nn:50070"}}, "[hdfs] uri: must be hdfs://"),
    ({"kerberos": {"principal": "a@B"}}, "[kerberos] keytab: principal and keytab go together"),
    ({"lease": {"duration_s": 10, "renew_interval_s": 8}}, "[lease] renew_interval_s"),
    ({"verify": {"alert_topic_arn": "alerts"}}, "[verify] alert_topic_arn: must be an SNS"),
    ({"metrics": {"prometheus_port": "9464"}}, "[metrics] prometheus_port: must be an integer"),
    ({"hdfs": {"reconnect_initial_s": 10, "reconnect_max_s": 5}},
     "[hdfs] reconnect_max_s: must be >= reconnect_initial_s (10)"),
    ({"hdfs": {"reconnect_initial_s": 0}}, "[hdfs] reconnect_initial_s: must be >= 1"),
])
def test_mistakes_name_the_file_and_the_key(sections, message):
    with pytest.raises(ConfigError) as info:
        settings(**sections)
    assert str(info.value).startswith("agent.toml: ") and message in str(info.value)


FSIMAGE = {"bucket": "lake", "inventory_job": "hdfs-events-prod-inventory"}


@pytest.mark.parametrize("key", ["gap_policy", "first_start"])
def test_the_image_policies_take_the_inventory_job_from_fsimage(key):
    s = settings(inotify={key: "fsimage"}, fsimage=FSIMAGE)
    assert getattr(s.inotify, key) == "fsimage"


@pytest.mark.parametrize(("fsimage", "message"), [
    ({"bucket": "lake"}, "agent.toml: [fsimage] inventory_job: required with [inotify] "
                         'gap_policy = "fsimage" (CDK output InventoryJobName)'),
    (None, "agent.toml: [fsimage]: required with [inotify] gap_policy = \"fsimage\" (bucket "
           "and inventory_job at least)"),
    ({"inventory_job": "inventory"}, "agent.toml: [fsimage] bucket: required"),
])
def test_gap_policy_fsimage_without_the_job_names_the_missing_key(fsimage, message):
    sections = {"inotify": {"gap_policy": "fsimage"}} | ({"fsimage": fsimage} if fsimage else {})
    with pytest.raises(ConfigError) as info:
        settings(**sections)
    assert str(info.value).startswith(message)


def test_first_start_fsimage_without_the_job_is_refused_when_the_file_is_read():
    with pytest.raises(ConfigError, match=r'^agent\.toml: \[fsimage\] inventory_job: required '
                                          r'with \[inotify\] first_start = "fsimage" and '
                                          r'gap_policy = "fsimage"'):
        settings(inotify={"first_start": "fsimage", "gap_policy": "fsimage"},
                 fsimage={"bucket": "lake"})
