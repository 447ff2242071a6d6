"""The on-prem agent's commands as the deployed on-prem principal, IAM enforced: `run`, `replay`,
`verify` (and its drift alerts, taken by an operator with `hdfs-events drift receive`),
`doctor`, `sync run|status|verify`, `audit run` against one real NameNode and the `local`
environment deployed into the kit's enforcing moto server (tests/kit/iam_cloud.py). Each shows
what its user sees, and the server denied nothing: every call the command made is granted by
the policy the template ships.

The agent.toml is the one a site writes for this deployment: the stack outputs' queue and
tables, the DynamoDB checkpoint with the lease, heartbeats, the alert topic, and cdk.json's
sync destination. The consumer fills the index as its own role, with the function's deployed
environment, so `verify` compares HDFS with what the pipeline wrote.

The synth overrides cdk.json's local index_prefixes with /data/finance (the CDK CLI's way,
CDK_CONTEXT_JSON): the local env indexes /data/finance/orders only, and `verify /data/finance`
of a prefix the index does not cover reports everything missing.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hdfs_events import lake_layout, names
from hdfs_events.drift_alert import parse_alert
from onprem_agent.checkpoint import DynamoCheckpointStore
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.iam_cloud import REGION, IamCloud, Principal
from tests.kit.live_agent import AGENT
from tests.kit.local_cloud import synth
from tests.kit.sample_edits import SAMPLE_EDITS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CDK_JSON = REPO / "cdk.json"
CLOUD_CLI = Path(sys.executable).parent / "hdfs-events"
CLUSTER = "demo"  # cdk.json local clusters
FINANCE = "/data/finance"
# The live workload: a directory tree under the indexed and synced prefix, and a user's file.
WORKLOAD = [["mkdirs", f"{FINANCE}/orders/2026"],
            ["write", f"{FINANCE}/orders/2026/a.csv", "1,2\n"],
            ["write", f"{FINANCE}/ledger.csv", "x" * 300], ["mkdirs", "/user/alice"],
            ["write", "/user/alice/notes.txt", "hello"],
            ["rename", f"{FINANCE}/ledger.csv", f"{FINANCE}/ledger-2026.csv"]]
FINANCE_FILES = {f"{FINANCE}/orders/2026/a.csv", f"{FINANCE}/ledger-2026.csv"}


def _local_context() -> tuple[dict, str]:
    environments = json.loads(CDK_JSON.read_text())["context"]["environments"]
    environments["local"]["index_prefixes"] = [FINANCE, "/user"]
    (destination,) = [d.split("=", 1)[1] for d in environments["local"]["sync_destinations"]
                      if d.startswith(f"{CLUSTER}=")]
    return {"environments": environments}, destination


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iam-agent")


@pytest.fixture(scope="module")
def deployment(work: Path) -> Iterator[tuple[IamCloud, HdfsCluster]]:
    """The cloud and the NameNode; the synth (a Node process) runs while the NameNode starts."""
    context, destination = _local_context()
    with ThreadPoolExecutor(1) as pool:
        assembly = pool.submit(synth, "local", work / "cdk.out", context)
        with HdfsCluster.start(work / "hdfs") as cluster, \
                IamCloud.start(work / "moto.log") as cloud:
            cloud.deploy(assembly.result())
            # The sync destination is the customer's bucket, not the app's: its owner makes it.
            cloud.client("s3").create_bucket(
                Bucket=destination[5:].split("/", 1)[0],
                CreateBucketConfiguration={"LocationConstraint": REGION})
            yield cloud, cluster


@pytest.fixture(scope="module")
def cloud(deployment: tuple[IamCloud, HdfsCluster]) -> IamCloud:
    return deployment[0]


@pytest.fixture(scope="module")
def hdfs(deployment: tuple[IamCloud, HdfsCluster]) -> HdfsCluster:
    return deployment[1]


@pytest.fixture(scope="module")
def agent(cloud: IamCloud) -> Principal:
    return cloud.principal("OnPremdemoUser")


@pytest.fixture(scope="module")
def config(work: Path, cloud: IamCloud, hdfs: HdfsCluster) -> Path:
    out = cloud.outputs
    _, destination = _local_context()
    path = work / "agent.toml"
    path.write_text(f'''cluster = "{CLUSTER}"
[sqs]
queue_url = "{out["EventQueueUrl"]}"
[checkpoint]
store = "dynamodb"
table = "{out["StateTableName"]}"
interval_ms = 100
[packing]
linger_ms = 50
[hdfs]
uri = "{hdfs.uri}"
conf_dir = "{hdfs.conf_dir}"
[inotify]
poll_timeout_ms = 50
alert_topic_arn = "{out["AlertTopicArn"]}"
[lease]
enabled = true
[metrics]
prometheus_port = 0
heartbeat_interval_s = 1
[verify]
index_table = "{out["IndexTableName"]}"
alert_topic_arn = "{out["AlertTopicArn"]}"
drift_queue_url = "{out["DriftAlertQueueUrl"]}"
[sync]
destination = "{destination}"
table = "{out["SyncTableName"]}"
paths = ["{FINANCE}"]
alert_topic_arn = "{out["AlertTopicArn"]}"
''', encoding="utf-8")
    return path


def agent_command(cloud: IamCloud, agent: Principal, *args: str,
                  timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT), *args], capture_output=True, text=True,
                          timeout=timeout_s, env=cloud.environ(agent))


class Background:
    """A long-running agent command (`run`, `sync run`) as the principal, stopped by SIGTERM
    as systemd stops it."""

    def __init__(self, cloud: IamCloud, agent: Principal, log: Path, *args: str) -> None:
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen([str(AGENT), *args], stdout=out, stderr=out,
                                            env=cloud.environ(agent))

    def wait_for(self, done: object, what: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():  # type: ignore[operator]
            assert self.process.poll() is None, f"exited {self.process.returncode} before " \
                                                f"{what}: {self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"no {what}: {self.output()[-3000:]}"
            time.sleep(0.1)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def shipped(cloud: IamCloud, agent: Principal, config: Path, hdfs: HdfsCluster,
            work: Path) -> tuple[int, str, int]:
    """`run` until its checkpoint passed the workload, then SIGTERM: (exit code, output,
    the workload's last txid)."""
    checkpoint = DynamoCheckpointStore(cloud.outputs["StateTableName"], CLUSTER,
                                       client=cloud.client("dynamodb"))
    run = Background(cloud, agent, work / "run.log", "run", "--config", str(config))
    try:
        hdfs.run(WORKLOAD)
        txid = hdfs.txid()
        run.wait_for(lambda: (checkpoint.load() or 0) >= txid, f"checkpoint {txid}")
        time.sleep(1.5)  # one heartbeat more (interval 1 s): PutMetricData as the agent
    finally:
        code = run.stop()
    return code, run.output(), txid


@pytest.fixture(scope="module")
def indexed(cloud: IamCloud, shipped: tuple[int, str, int]) -> str:
    """The consumer, as its role with its deployed environment, over everything `run` sent
    and the continue requests that leaves on the apply queue (the local stand-in for the
    function's two event source mappings, tests/kit/sqs_lambda.py)."""
    consumer = cloud.principal("ConsumerRole")
    function = cloud.client("lambda").get_function_configuration(
        FunctionName=cloud.outputs["IngestFunctionName"])
    env = cloud.environ(consumer) | function["Environment"]["Variables"] | {
        "POWERTOOLS_TRACE_DISABLED": "1"}
    done = subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda",
                           cloud.outputs["EventQueueUrl"], cloud.outputs["ApplyQueueUrl"],
                           "--idle-polls", "3"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    cloud.assert_nothing_denied()
    index = cloud.client("dynamodb").scan(TableName=cloud.outputs["IndexTableName"])["Items"]
    assert index, f"nothing indexed: {done.stdout[-2000:]}{done.stderr[-4000:]}"
    return done.stdout


def test_run_ships_live_events_as_the_agent(cloud: IamCloud,
                                            shipped: tuple[int, str, int]) -> None:
    code, output, txid = shipped
    assert code == 0, output[-3000:]
    cloud.assert_nothing_denied()
    # SIGTERM: flushed, acknowledged, the checkpoint (the agent's DynamoDB item) at or after
    # the workload's last txid.
    checkpoint = DynamoCheckpointStore(cloud.outputs["StateTableName"], CLUSTER,
                                       client=cloud.client("dynamodb"))
    assert (checkpoint.load() or 0) >= txid
    assert "Traceback" not in output and "AccessDenied" not in output


def test_verify_of_a_prefix_as_the_agent(cloud: IamCloud, agent: Principal, config: Path,
                                         indexed: str) -> None:
    done = agent_command(cloud, agent, "verify", "--config", str(config), "--prefix", FINANCE)
    assert done.returncode == 0, done.stdout + done.stderr
    (head,) = [line for line in done.stdout.splitlines() if line.startswith("verify ")]
    # /data/finance itself, orders, orders/2026, a.csv, ledger-2026.csv
    assert head.startswith(f"verify {FINANCE}: 5 entries in HDFS, 5 in the index ")
    assert head.endswith("; 0 differ")
    cloud.assert_nothing_denied()


def test_verify_sends_each_drifting_path_to_the_drift_queue_and_an_operator_takes_them(
        cloud: IamCloud, agent: Principal, config: Path, hdfs: HdfsCluster,
        indexed: str) -> None:
    # A file the index never saw (no agent runs now) and an index entry changed by hand, under
    # /user: indexed, but no sync path (test_sync_run_... compares /data/finance exactly).
    hdfs.run([["write", "/user/alice/unseen.txt", "new"]])
    cloud.client("dynamodb").update_item(
        TableName=cloud.outputs["IndexTableName"],
        Key={names.INDEX_PK: {"S": names.index_partition(CLUSTER, "/user/alice")},
             names.INDEX_SK: {"S": "notes.txt"}},
        UpdateExpression="SET #size = :size", ExpressionAttributeNames={"#size": "size"},
        ExpressionAttributeValues={":size": {"N": "999"}})
    done = agent_command(cloud, agent, "verify", "--config", str(config), "--prefix", "/user")
    assert done.returncode == 1, done.stdout + done.stderr  # drift above drift_threshold 0
    queue = cloud.outputs["DriftAlertQueueUrl"]
    assert f"drift alerts: 2 sent to {queue}" in done.stdout, done.stdout

    # `hdfs-events drift receive` as a user holding the shipped operator-read policy
    operator = cloud.user_holding("drift-operator",
                                  managed=[cloud.outputs["OperatorReadPolicyArn"]])
    taken = subprocess.run([str(CLOUD_CLI), "drift", "receive", "--queue-url", queue, "--json",
                            "--wait", "0"], capture_output=True, text=True, timeout=120,
                           env=cloud.environ(operator))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    alerts = {a.path: a for a in map(parse_alert, taken.stdout.splitlines())}
    assert sorted(alerts) == ["/user/alice/notes.txt", "/user/alice/unseen.txt"]
    notes, unseen = alerts["/user/alice/notes.txt"], alerts["/user/alice/unseen.txt"]
    assert (notes.drift, notes.hdfs, notes.index) == ("size", len("hello"), 999)
    assert (unseen.drift, unseen.cluster, unseen.prefix) == ("missing", CLUSTER, "/user")
    assert notes.run_id == unseen.run_id
    waiting = cloud.client("sqs").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages",
                                        "ApproximateNumberOfMessagesNotVisible"])
    assert sum(map(int, waiting["Attributes"].values())) == 0  # taken means deleted
    cloud.assert_nothing_denied()


def test_doctor_as_the_agent(cloud: IamCloud, agent: Principal, config: Path,
                             hdfs: HdfsCluster) -> None:
    done = agent_command(cloud, agent, "doctor", "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.strip()}
    assert lines["credentials"].startswith("OK") and agent.arn in lines["credentials"]
    for check in ("config", "queue", "state", "jvm", "namenode", "superuser"):
        assert lines[check].startswith("OK"), done.stdout
    cloud.assert_nothing_denied()


def test_sync_run_status_and_verify_as_the_agent(cloud: IamCloud, agent: Principal,
                                                 config: Path, hdfs: HdfsCluster,
                                                 shipped: tuple[int, str, int],
                                                 work: Path) -> None:
    _, destination = _local_context()
    bucket, prefix = destination[5:].split("/", 1)
    s3 = cloud.client("s3")

    def replicated() -> set[str]:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        return {"/" + o["Key"][len(prefix):] for o in listed}

    sync = Background(cloud, agent, work / "sync.log", "sync", "run", "--config", str(config))
    try:
        sync.wait_for(lambda: replicated() >= FINANCE_FILES, "replica of /data/finance")
    finally:
        code = sync.stop()
    assert code == 0, sync.output()[-3000:]
    assert replicated() == FINANCE_FILES  # /user is not a sync path

    status = agent_command(cloud, agent, "sync", "status", "--config", str(config))
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.startswith("replicated txid: ") and "parked paths: 0" in status.stdout

    verify = agent_command(cloud, agent, "sync", "verify", "--config", str(config),
                           "--prefix", FINANCE)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "2 files in HDFS, 2 checksums compared, 0 differ" in verify.stdout, verify.stdout
    cloud.assert_nothing_denied()


def test_replay_ships_an_edit_log_as_the_agent(cloud: IamCloud, agent: Principal, config: Path,
                                               indexed: str, work: Path) -> None:
    # After the consumer ran: the edit log's txids are another history than the live
    # cluster's, so its messages stay on the queue instead of going into this index.
    done = agent_command(cloud, agent, "replay", "--config", str(config),
                         "--edits", str(SAMPLE_EDITS),
                         "--checkpoint", str(work / "replay-checkpoint.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads((work / "replay-checkpoint.json").read_text())
    assert saved["txid"] > 0
    sqs = cloud.client("sqs")
    waiting = sqs.get_queue_attributes(QueueUrl=cloud.outputs["EventQueueUrl"],
                                       AttributeNames=["ApproximateNumberOfMessages"])
    assert int(waiting["Attributes"]["ApproximateNumberOfMessages"]) > 0
    cloud.assert_nothing_denied()


def test_audit_run_ships_the_namenodes_audit_log_as_the_agent(
        cloud: IamCloud, agent: Principal, config: Path, hdfs: HdfsCluster, work: Path,
        shipped: tuple[int, str, int]) -> None:
    # The NameNode's own audit log (the kit's log4j writes it under <base_dir>/audit), which
    # holds the live workload's calls: PutObject under raw-audit/cluster=demo/ and the audit
    # metrics, as the deployed on-prem user.
    lake, prefix = cloud.outputs["LakeBucketName"], lake_layout.audit_cluster_prefix(CLUSTER)
    audit_config = work / "agent-audit.toml"
    audit_config.write_text(config.read_text() + f"""[audit]
log_dir = "{hdfs.audit_dir}"
bucket = "{lake}"
host = "nn1.example.com"
state_file = "{work / 'audit-position.json'}"
flush_interval_s = 1
poll_interval_ms = 50
metrics_interval_s = 1
""", encoding="utf-8")
    s3 = cloud.client("s3")

    def records() -> list[dict]:
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=lake, Prefix=prefix).get(
            "Contents", [])]
        return [json.loads(line) for key in keys for line in gzip.decompress(
            s3.get_object(Bucket=lake, Key=key)["Body"].read()).splitlines()]

    audit = Background(cloud, agent, work / "audit.log", "audit", "run", "--config",
                       str(audit_config))
    try:
        audit.wait_for(lambda: any(r["cmd"] == "rename" and r["src"] == f"{FINANCE}/ledger.csv"
                                   for r in records()), "the workload's rename in the lake")
        time.sleep(1.5)  # one metrics interval more: PutMetricData as the agent
    finally:
        assert audit.stop() == 0, audit.output()[-3000:]
    cloud.assert_nothing_denied()


def test_nothing_the_commands_did_was_denied_but_a_denial_would_show(cloud: IamCloud,
                                                                      agent: Principal) -> None:
    # The denial log is what the tests above read: it records a denial of this principal.
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError):
        cloud.client("dynamodb", agent).delete_table(TableName=cloud.outputs["IndexTableName"])
    (denial,) = cloud.denials()
    assert denial.startswith(f"{agent.arn} dynamodb:DeleteTable ")


def test_fetch_image_puts_the_image_under_its_own_cluster_only(
        cloud: IamCloud, agent: Principal, config: Path, hdfs: HdfsCluster, work: Path) -> None:
    # After the denial test above, which counts every denial of the module: this one's own.
    from botocore.exceptions import ClientError

    from tests.kit.hadoop.jars import LIB

    lake, before = cloud.outputs["LakeBucketName"], len(cloud.denials())
    hdfs.checkpoint()
    fetch_config = work / "agent-fetch.toml"
    fetch_config.write_text(config.read_text() + f'[fsimage]\nbucket = "{lake}"\n')
    # DFSAdmin is in hadoop-hdfs (here the kit's minicluster jar), not in pyspark's client jars
    done = subprocess.run([str(AGENT), "fetch-image", "--config", str(fetch_config)],
                          capture_output=True, text=True, timeout=300,
                          env=cloud.environ(agent) | {"HADOOP_CLASSPATH": f"{LIB}/*"})
    assert done.returncode == 0, done.stderr[-3000:]
    own = lake_layout.fsimage_cluster_prefix(CLUSTER)
    assert f" s3://{lake}/{own}txid=" in done.stdout, done.stdout
    keys = [o["Key"] for o in cloud.client("s3").list_objects_v2(Bucket=lake, Prefix=own)[
        "Contents"]]
    assert len(keys) == 2 and any(k.endswith("/_fetched.json") for k in keys), keys
    assert cloud.denials()[before:] == []

    other = lake_layout.fsimage_key("other", 1)
    with pytest.raises(ClientError) as refused:
        cloud.client("s3", agent).put_object(Bucket=lake, Key=other, Body=b"HDFSIMG1")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    (denial,) = cloud.denials()[before:]
    assert "s3:PutObject" in denial and other in denial, denial
