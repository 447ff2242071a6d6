"""doctor: one actionable line per check, non-zero exit on a failure."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import boto3
import pytest

from onprem_agent.commands import doctor


@pytest.fixture
def clean_hadoop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same classpath the session's JVM was started with: pyspark's jars.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("HADOOP_CLASSPATH", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)


def write_config(tmp_path: Path, queue_url: str, extra: str = "") -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(f'''
cluster = "prod"
[sqs]
queue_url = "{queue_url}"
[checkpoint]
store = "file"
path = "checkpoint.json"
[hdfs]
uri = "hdfs://127.0.0.1:1"
{extra}
''')
    return path


@pytest.fixture
def queue_url(moto_endpoint: str) -> str:
    return boto3.client("sqs").create_queue(
        QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]


def test_unreachable_namenode_fails_clearly_and_quickly(tmp_path, queue_url, jvm,
                                                         clean_hadoop_env, capsys):
    config = write_config(tmp_path, queue_url)
    started = time.monotonic()
    code = doctor.run(argparse.Namespace(config=config, cluster=None))
    elapsed = time.monotonic() - started
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert elapsed < 30  # the bound for this check; it takes a few seconds here
    by_name = {line.split()[1]: line for line in lines}
    assert by_name["config"].startswith("OK")
    assert by_name["credentials"].startswith("OK")
    assert by_name["queue"].startswith("OK")
    assert by_name["jvm"].startswith("OK") and "Java 17" in by_name["jvm"]
    namenode = by_name["namenode"]
    # Refused: a NameNode that is down or restarting looks like this, so the line says what a
    # running agent does about it, then what to check.
    assert namenode.startswith("FAIL") and \
        "NameNode hdfs://127.0.0.1:1 unavailable (ConnectException: " in namenode
    assert "a running agent waits for it, reconnecting every 1-30 s" in namenode
    assert "-> check that the NameNode runs" in namenode and "[hdfs] uri" in namenode


def test_missing_queue_is_one_failed_line(tmp_path, moto_endpoint, jvm, clean_hadoop_env):
    url = f"{moto_endpoint}/123456789012/nope.fifo"
    checks = doctor.diagnose(write_config(tmp_path, url))
    failed = [c for c in checks if c.ok is False]
    assert failed[0].name == "queue"
    assert "-> check [sqs] queue_url" in failed[0].detail


def test_a_keytab_others_can_read_is_refused_before_login(tmp_path, queue_url, jvm,
                                                          clean_hadoop_env):
    keytab = tmp_path / "agent.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o644)
    extra = f'[kerberos]\nprincipal = "agent@EXAMPLE.COM"\nkeytab = "{keytab}"\n'
    checks = {c.name: c for c in doctor.diagnose(write_config(tmp_path, queue_url, extra))}
    assert checks["kerberos"].ok is False and f"chmod 600 {keytab}" in checks["kerberos"].detail
    assert checks["namenode"].ok is None


def test_a_config_error_names_the_key(tmp_path, moto_endpoint):
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "prod"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    '[checkpoint]\npath = "c.json"\n[inotify]\ngap_policy = "skip"\n')
    [check] = doctor.diagnose(path)
    assert check.ok is False and "[inotify] gap_policy" in check.detail
    assert "agent.toml" in check.detail
