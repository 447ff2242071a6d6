"""`hdfs-events-agent audit run` against the audit log a real NameNode writes through log4j
(tests/kit/hadoop/log4j.properties: a RollingFileAppender of 20 KB, Hadoop's own layout), into
the lake bucket on the moto server.

What is expected comes from the audit files themselves, read whole at the end (200 backups:
log4j deletes none here): every mutating line, every denial and the reads under read_paths, each
in the lake once. Objects are compared as the compaction will read them: deduplicated by
(cluster, host, file id, offset).
"""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from hdfs_events import lake_layout, names
from hdfs_events.audit import AuditRecord
from onprem_agent.audit.logfiles import RotatingLog
from onprem_agent.audit.shipper import is_shipped
from tests.kit.hadoop.audit_files import AUDIT_LOG, audit_records
from tests.kit.hadoop.cluster import HdfsCluster, HdfsError
from tests.kit.live_agent import AgentProcess

CLUSTER, HOST, BUCKET = "prod", "nn1.example.com", "lake"
READ_PATHS = ["/shared"]


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs")) as cluster:
        cluster.run([*(op for user in ("alice", "bob", "carol") for op in (
            ["mkdirs", f"/user/{user}"], ["chown", f"/user/{user}", user, None])),
            ["mkdirs", "/shared"], ["chmod", "/shared", "0777"], ["chmod", "/user/bob", "0700"]])
        yield cluster


@pytest.fixture
def lake(moto_endpoint: str) -> str:
    boto3.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    return BUCKET


def agent_config(directory: Path, hdfs: HdfsCluster, **audit: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    settings = {"log_dir": str(hdfs.audit_dir), "bucket": BUCKET, "host": HOST,
                "read_paths": READ_PATHS, "flush_interval_s": 1, "poll_interval_ms": 50,
                "metrics_interval_s": 0, "state_file": str(directory / "audit-position.json"),
                **audit}
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    config = directory / "agent.toml"
    config.write_text(
        f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = "https://sqs.eu-west-1.amazonaws.com/1/'
        f'events.fifo"\n[checkpoint]\npath = "checkpoint.json"\n[audit]\n' + "\n".join(lines)
        + "\n")
    return config


def start_agent(config: Path) -> AgentProcess:
    return AgentProcess.start(config, command=("audit", "run"), log_suffix=".audit.log")


_read: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (key, ETag) -> records


def lake_objects() -> dict[str, list[dict[str, Any]]]:
    """key -> records; an object is read again only when its ETag changed (a re-send)."""
    s3, out = boto3.client("s3"), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for o in page.get("Contents", []):
            version = (o["Key"], o["ETag"])
            if version not in _read:
                body = s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
                _read[version] = [json.loads(x) for x in gzip.decompress(body).splitlines()]
            out[o["Key"]] = _read[version]
    return out


def written_lines(hdfs: HdfsCluster) -> list[AuditRecord]:
    """Every line of every audit file now, parsed, with its identity as the agent computes it."""
    return audit_records(hdfs, CLUSTER, HOST)


def expected_records(hdfs: HdfsCluster) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {r.identity: r.to_json() for r in written_lines(hdfs) if is_shipped(r, READ_PATHS)}


def identity(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["cluster"], record["host"], record["file_id"], record["offset"])


def wait_for_lake(agent: AgentProcess, want: set[tuple[Any, ...]], timeout_s: float = 120
                  ) -> None:
    def missing() -> set[tuple[Any, ...]]:
        return want - {identity(r) for records in lake_objects().values() for r in records}

    agent.wait_for(lambda: not missing(),
                   lambda: f"{len(missing())} audit lines never reached the lake", timeout_s,
                   poll_s=0.2)


def as_user(user: str, *ops: list[Any]) -> list[Any]:
    return ["as_user", user, list(ops)]


def test_users_mutations_and_denials_reach_the_lake_once_and_reads_only_under_read_paths(
        hdfs: HdfsCluster, lake: str, tmp_path: Path) -> None:
    agent = start_agent(agent_config(tmp_path / "agent", hdfs, metrics_interval_s=1))
    try:
        hdfs.run([
            as_user("alice", ["write", "/user/alice/f1", "a"], ["rename", "/user/alice/f1",
                    "/user/alice/f2"], ["chmod", "/user/alice/f2", "0600"],
                    ["read", "/user/alice/f2"], ["delete", "/user/alice/f2"],
                    ["write", "/shared/report", "r"]),
            as_user("bob", ["mkdirs", "/user/bob/d"], ["write", "/user/bob/d/x", "b"],
                    ["rename", "/user/bob/d/x", "/user/bob/d/y"], ["read", "/shared/report"],
                    ["delete", "/user/bob/d", True]),
        ])
        with pytest.raises(HdfsError, match="Permission denied"):
            hdfs.run([as_user("carol", ["write", "/user/bob/intruder", "c"])])
        expected = expected_records(hdfs)
        wait_for_lake(agent, set(expected))
    finally:
        assert agent.stop() == 0, agent.log_tail()

    objects = lake_objects()
    shipped = [r for records in objects.values() for r in records]
    assert all(k.startswith(lake_layout.audit_cluster_prefix(CLUSTER)) for k in objects)
    assert Counter(identity(r) for r in shipped) == Counter(set(expected))  # once each
    assert {identity(r): r for r in shipped} == expected
    seen = {(r["user"], r["cmd"], r["src"], r["allowed"]) for r in shipped}
    # What the users did, as the NameNode audited it: the workload's own calls.
    assert {("alice", "create", "/user/alice/f1", True),
            ("alice", "rename", "/user/alice/f1", True),
            ("alice", "setPermission", "/user/alice/f2", True),
            ("alice", "delete", "/user/alice/f2", True),
            ("bob", "mkdirs", "/user/bob/d", True),
            ("bob", "delete", "/user/bob/d", True),
            ("carol", "create", "/user/bob/intruder", False),
            ("bob", "open", "/shared/report", True)} <= seen
    # Reads outside read_paths stay home, though the NameNode audited them.
    assert ("alice", "open", "/user/alice/f2", True) not in seen
    assert any(r.cmd == "open" and r.src == "/user/alice/f2" for r in written_lines(hdfs))
    # The denial is a metric by command (moto's CloudWatch keeps what the agent put).
    metrics = boto3.client("cloudwatch").list_metrics(
        Namespace=names.METRICS_NAMESPACE, MetricName=names.METRIC_DENIED_ACCESS)["Metrics"]
    assert {(names.DIMENSION_COMMAND, "create")} <= {
        (d["Name"], d["Value"]) for m in metrics for d in m["Dimensions"]}


def test_rotations_and_a_sigkill_lose_no_line_and_double_none(
        hdfs: HdfsCluster, lake: str, tmp_path: Path) -> None:
    max_batch = 40
    config = agent_config(tmp_path / "agent", hdfs, max_batch_lines=max_batch)
    before = len(RotatingLog(hdfs.audit_dir, AUDIT_LOG).files())

    def burst(n: int, tag: str) -> None:
        hdfs.run([as_user(user, *(op for i in range(n) for op in (
            ["mkdirs", f"/user/{user}/{tag}-{i}"],  # NameNode-only calls: a fast burst
            ["rename", f"/user/{user}/{tag}-{i}", f"/user/{user}/{tag}-{i}.done"])))
            for user in ("alice", "bob", "carol")])

    agent = start_agent(config)
    try:
        burst(50, "one")
        # Mid-way: some objects written and the position saved, the burst still being read.
        wait_for_position(agent, config)
        burst(50, "two")
        agent.kill()
        burst(50, "three")  # log4j rotates while no agent runs
        agent = start_agent(config)
        expected = expected_records(hdfs)
        wait_for_lake(agent, set(expected))
    finally:
        assert agent.stop() == 0, agent.log_tail()

    assert len(RotatingLog(hdfs.audit_dir, AUDIT_LOG).files()) >= before + 5  # rotations
    shipped = [r for records in lake_objects().values() for r in records]
    by_identity: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in shipped:
        by_identity.setdefault(identity(r), []).append(r)
    # Deduplicated as the compaction will: exactly the lines written, none lost.
    assert set(by_identity) == set(expected)
    # A line read twice is the same identity with the same record, never a second identity.
    assert all(copies == [expected[k]] * len(copies) for k, copies in by_identity.items())
    # At most the one batch the kill caught is read again.
    assert len(shipped) - len(expected) <= max_batch


def wait_for_position(agent: AgentProcess, config: Path, timeout_s: float = 60) -> None:
    state = config.parent / "audit-position.json"
    deadline = time.monotonic() + timeout_s
    while not state.exists():
        if agent.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no position saved: {agent.log_tail()}")
        time.sleep(0.05)
