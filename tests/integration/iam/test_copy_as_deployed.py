"""The return channel as deployed, IAM enforced: `hdfs-events copy submit` as a principal holding
exactly the template's copy-submit policy of cluster `demo`, `hdfs-events copy status` as one
holding the operator-read policy (the customer attaches these shipped managed policies to
whatever runs the CLI; here the kit's admin makes a user and attaches them by their ARNs, the
stack outputs), and `hdfs-events-agent copy-worker` as the on-prem user, whose DistCp reads the
lake through S3A with the same user's keys into a real NameNode. Each shows what its user sees,
and the server denied nothing; then each principal with one needed grant taken out of a copy
of its shipped policy is denied, so these tests fail when a grant goes missing.

S3A (hadoop-aws 3.3.4, AWS SDK for Java v1) signs with SigV4 and passes moto's signature check:
the denial test shows its GetObject is authorized as the on-prem user, not waved through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra.synth import synthesized
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.edge import QUICK_START, write_edge_conf, write_hadoop_launcher
from tests.kit.iam_cloud import REGION, IamCloud, Principal, without_action

pytestmark = pytest.mark.slow

CLI = Path(sys.executable).parent / "hdfs-events"
AGENT = Path(sys.executable).parent / "hdfs-events-agent"
CLUSTER = "demo"  # cdk.json local clusters
FILES = {"part-00000.parquet": b"a" * 1000, "part-00001.parquet": b"b" * 2345,
         "sub/part-00002.parquet": b"c" * 17}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iam-copy")


@pytest.fixture(scope="module")
def cloud(work: Path) -> Iterator[IamCloud]:
    # cdk.json's own `local`, so the session's one synth of it (tests/infra/synth.py), which
    # tests/infra and tests/e2e read too: a synth of its own was a Node process of ~10-20 s.
    with IamCloud.start(work / "moto.log") as cloud:
        cloud.deploy(synthesized()["local"])
        yield cloud


@pytest.fixture(scope="module")
def edge_path(work: Path, cloud: IamCloud) -> Iterator[tuple[HdfsCluster, str]]:
    """The real cluster and a PATH whose `hadoop` is the edge node's (DistCp, FsShell), S3A
    pointed at the enforcing server with its credentials from the environment."""
    with HdfsCluster.start(work / "hdfs") as hdfs:
        conf = write_edge_conf(hdfs.conf_dir, work / "edge-conf", s3_endpoint=cloud.endpoint,
                               region=REGION)
        write_hadoop_launcher(work / "bin", conf, java_options=QUICK_START)
        yield hdfs, f"{work / 'bin'}{os.pathsep}{os.environ['PATH']}"


def _put_dataset(cloud: IamCloud, prefix: str) -> str:
    """A finished export in the lake (what a cloud job leaves): the source URI."""
    bucket = cloud.outputs["LakeBucketName"]
    s3 = cloud.client("s3")
    for name, data in FILES.items():
        s3.put_object(Bucket=bucket, Key=prefix + name, Body=data)
    return f"s3://{bucket}/{prefix}"


def _cli(cloud: IamCloud, principal: Principal, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120,
                          env=cloud.environ(principal))


def _submit(cloud: IamCloud, principal: Principal, request_id: str,
            source: str) -> subprocess.CompletedProcess[str]:
    return _cli(cloud, principal, "copy", "submit",
                "--queue-url", cloud.outputs["CopyRequestQueueUrlDemo"], "--cluster", CLUSTER,
                "--transfers-table", cloud.outputs["TransfersTableName"],
                "--request-id", request_id, "--source", source,
                "--destination", f"/data/imports/{request_id}", "--listing-from-source")


def _status(cloud: IamCloud, principal: Principal,
            request_id: str) -> subprocess.CompletedProcess[str]:
    return _cli(cloud, principal, "copy", "status", request_id, "--cluster", CLUSTER,
                "--transfers-table", cloud.outputs["TransfersTableName"], "--json")


def _worker_config(cloud: IamCloud, work: Path) -> Path:
    out = cloud.outputs
    path = work / "agent.toml"
    path.write_text(f'''cluster = "{CLUSTER}"
[sqs]
queue_url = "{out["EventQueueUrl"]}"
[checkpoint]
path = "{work / "checkpoint.json"}"
[copy]
queue_url = "{out["CopyRequestQueueUrlDemo"]}"
transfers_table = "{out["TransfersTableName"]}"
notify_topic_arn = "{out["AlertTopicArn"]}"
allowed_sources = ["s3://{out["LakeBucketName"]}/exports/"]
allowed_destinations = ["/data/imports/"]
max_attempts = 1
visibility_timeout_s = 30
heartbeat_s = 10
poll_wait_s = 1
copy_timeout_s = 300
''', encoding="utf-8")
    return path


def _copy_worker(cloud: IamCloud, principal: Principal, config: Path,
                 path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT), "copy-worker", "--config", str(config),
                           "--exit-when-idle"], capture_output=True, text=True, timeout=300,
                          env=cloud.environ(principal) | {"PATH": path})


@pytest.fixture(scope="module")
def submitter(cloud: IamCloud) -> Principal:
    return cloud.user_holding("customer-copy-job",
                              managed=[cloud.outputs["CopySubmitPolicyArnDemo"]])


@pytest.fixture(scope="module")
def operator(cloud: IamCloud) -> Principal:
    return cloud.user_holding("customer-operator",
                              managed=[cloud.outputs["OperatorReadPolicyArn"]])


def _denials_of(cloud: IamCloud, who: str) -> list[str]:
    return [d for d in cloud.denials() if who in d]


def test_submit_status_and_copy_each_as_its_principal(
        cloud: IamCloud, submitter: Principal, operator: Principal,
        edge_path: tuple[HdfsCluster, str], work: Path) -> None:
    hdfs, path = edge_path
    source = _put_dataset(cloud, "exports/sales/dt=2026-11-20/")

    sent = _submit(cloud, submitter, "sales-1", source)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["request_id"] == "sales-1"
    requested = _status(cloud, operator, "sales-1")
    assert requested.returncode == 0, requested.stderr
    assert json.loads(requested.stdout)["state"] == "requested"

    worker = _copy_worker(cloud, cloud.principal("OnPremdemoUser"), _worker_config(cloud, work),
                          path)
    assert worker.returncode == 0, worker.stderr[-3000:]

    [landed] = hdfs.run([["list", "/data/imports/sales-1"]])
    assert landed == {name: len(data) for name, data in FILES.items()}, worker.stderr[-3000:]
    done = _status(cloud, operator, "sales-1")
    assert done.returncode == 0, done.stderr
    item = json.loads(done.stdout)
    assert item["state"] == "verified", item
    assert (item["files"], item["bytes"]) == (len(FILES), sum(map(len, FILES.values())))
    assert cloud.denials() == []


def test_submit_without_its_send_grant_is_denied(cloud: IamCloud, work: Path) -> None:
    shipped = cloud.policy_document(cloud.outputs["CopySubmitPolicyArnDemo"])
    job = cloud.user_holding("copy-job-without-send", inline={
        "copy-submit": without_action(shipped, "SendCopyRequests", "sqs:SendMessage")})
    source = _put_dataset(cloud, "exports/denied/")

    sent = _submit(cloud, job, "denied-1", source)

    assert sent.returncode == 1
    assert "AccessDenied" in sent.stderr
    assert [d.split()[1] for d in _denials_of(cloud, job.arn)] == ["sqs:SendMessage"]


def test_status_without_its_read_grant_is_denied(cloud: IamCloud) -> None:
    shipped = cloud.policy_document(cloud.outputs["OperatorReadPolicyArn"])
    reader = cloud.user_holding("operator-without-transfers", inline={
        "operator-read": without_action(shipped, "ReadTransfers", "dynamodb:GetItem")})

    shown = _status(cloud, reader, "sales-1")

    assert shown.returncode == 1
    assert "AccessDenied" in shown.stderr
    assert [d.split()[1] for d in _denials_of(cloud, reader.arn)] == ["dynamodb:GetItem"]


def test_distcp_without_the_export_read_grant_is_denied(
        cloud: IamCloud, submitter: Principal, edge_path: tuple[HdfsCluster, str],
        work: Path) -> None:
    hdfs, path = edge_path
    agent = cloud.principal("OnPremdemoUser")
    managed, inline = cloud.policies_of(agent)
    onprem_arn = next(a for a in managed if a.endswith(f"-onprem-{CLUSTER}"))
    worker = cloud.user_holding("agent-without-export-reads", managed=[
        a for a in managed if a != onprem_arn], inline={**inline, "onprem": without_action(
            cloud.policy_document(onprem_arn), "ReadExports", "s3:GetObject")})
    source = _put_dataset(cloud, "exports/unreadable/")
    assert _submit(cloud, submitter, "unreadable-1", source).returncode == 0

    ran = _copy_worker(cloud, worker, _worker_config(cloud, work), path)

    assert ran.returncode == 0, ran.stderr[-3000:]  # a failed copy is an outcome, not a crash
    item = json.loads(_status(cloud, cloud.admin, "unreadable-1").stdout)
    assert item["state"] == "failed" and item["final"], item
    assert "AccessDenied" in item["reason"], item["reason"]  # DistCp's own words, kept
    # S3A's reads were made with the worker's own keys: moto logs an S3 denial by key id.
    denied = _denials_of(cloud, worker.access_key_id)
    assert denied and all(d.split()[1] == "s3:GetObject" for d in denied), cloud.denials()
    assert "/exports/unreadable" in denied[0]
    [listing] = hdfs.run([["list", "/data/imports"]])
    assert not any(name.startswith("unreadable-1/part") for name in listing)
