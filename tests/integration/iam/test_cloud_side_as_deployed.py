"""The cloud side as deployed, IAM enforced: the consumer handler as the consumer role, with the
function's environment from the template, over a real SQS batch the on-prem user put on the
event queue; `hdfs-events index status|ls` as a principal holding the shipped operator-read
policy; the Glue jobs (compaction, then rollups) as the Glue role with the arguments the
template gives them, local Spark reading and writing the lake through S3A with the role's
credentials and the compaction switching partitions through the Glue API (the template names a
database, so glue_jobs.catalog.catalog_for picks GlueCatalog, not the local JSON catalog); the
namespace inventory job as the Glue role repairing the index from an image the on-prem user
uploaded (a gap repair, `--repair_after`).
Each shows what its user sees and that the server denied nothing; then each principal with one
needed grant taken out of a copy of its shipped policy is denied.

The synth indexes "/" (cdk.json's local env indexes /data/finance/orders and /user; the sample
edit log the agent replays writes at the root). moto's CloudFormation skips Glue resources: the
kit's admin creates the template's database and the tables the jobs run here switch partitions
of, as CloudFormation would.

The Glue role also holds AWS's managed AWSGlueServiceRole (moto loads AWS's managed policies
here), which allows `glue:*` and `s3:ListBucket` on every resource: the role's own
PublishPartitions and ListLake statements are not what lets it make those calls, so the grant
taken out here is a read of the lake (ReadLake), which nothing else allows.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hdfs_events import names
from hdfs_events.envelope import encode_message
from hdfs_events.inventory_schema import INVENTORY_TABLE
from hdfs_events.lake_layout import fsimage_indexed_key, fsimage_key
from hdfs_events_cli.index_status import read_status
from tests.kit import glue_template
from tests.kit.fsimage_bytes import (
    b,
    delimit,
    enc_varint,
    image,
    inode_dir,
    inode_file,
    permission,
    string_table,
    v,
)
from tests.kit.glue_template import create_catalog, pseudo_parameters, resolve
from tests.kit.glue_workflow import reports, run_in_one_process
from tests.kit.iam_cloud import REGION, IamCloud, Principal, without_action
from tests.kit.index_builders import mkdir, mkfile
from tests.kit.local_cloud import Assembly, synth
from tests.kit.next_agent import next_agent_message
from tests.kit.sample_edits import SAMPLE_EDITS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CDK_JSON = REPO / "cdk.json"
CLI = Path(sys.executable).parent / "hdfs-events"
AGENT = Path(sys.executable).parent / "hdfs-events-agent"
CLUSTER = "demo"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iam-cloud-side")


@pytest.fixture(scope="module")
def deployed(work: Path) -> Iterator[tuple[IamCloud, Assembly]]:
    environments = json.loads(CDK_JSON.read_text())["context"]["environments"]
    environments["local"]["index_prefixes"] = ["/"]
    # The synth (a Node process) runs while the server starts.
    with ThreadPoolExecutor(1) as pool:
        synthesized = pool.submit(synth, "local", work / "cdk.out",
                                  {"environments": environments})
        with IamCloud.start(work / "moto.log") as cloud:
            assembly = synthesized.result()
            cloud.deploy(assembly)
            yield cloud, assembly


@pytest.fixture(scope="module")
def cloud(deployed: tuple[IamCloud, Assembly]) -> IamCloud:
    return deployed[0]


@pytest.fixture(scope="module")
def job_arguments(deployed: tuple[IamCloud, Assembly]) -> dict[str, list[str]]:
    """Creates the template's Glue database, events table, attribution table (the rollups
    read who made each mass delete from it; empty here) and namespace inventory table as the
    admin (moto's CloudFormation skips them); returns each job's script arguments from the
    template."""
    cloud, assembly = deployed
    (analytics,) = [s.template for s in assembly.stacks if s.name.endswith("-Analytics")]
    # the other stacks' exports, as moto's CloudFormation deployed them (the index table's name)
    exports = {glue_template.import_ref(e["Name"]): e["Value"]
               for page in cloud.client("cloudformation").get_paginator("list_exports").paginate()
               for e in page["Exports"]}
    refs = create_catalog(cloud.client("glue"), analytics, pseudo_parameters(
        cloud.admin.arn.split(":")[4], REGION) | exports,
        tables={"events", "attribution", INVENTORY_TABLE})
    by_name = glue_template.job_arguments(analytics, refs)
    # compact-audit's and attribute-events' grants (raw-audit/, the audit and attribution
    # tables) are checked against their calls by tests/infra/test_grants_cover_calls.py; this
    # chain has no audit objects to run them on.
    wanted = {"-compact-events": "compact", "-activity-rollups": "rollups",
              "-namespace-inventory": "inventory"}
    jobs = {role: arguments for name, arguments in by_name.items()
            for suffix, role in wanted.items() if name.endswith(suffix)}
    assert set(jobs) == {"compact", "rollups", "inventory"}, by_name
    return jobs


def _replay(cloud: IamCloud, work: Path) -> None:
    """The sample edit log on the event queue, sent by the on-prem user."""
    config = work / "agent.toml"
    config.write_text(f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = '
                      f'"{cloud.outputs["EventQueueUrl"]}"\n[checkpoint]\n'
                      f'path = "{work / "checkpoint.json"}"\n', encoding="utf-8")
    done = subprocess.run([str(AGENT), "replay", "--config", str(config),
                           "--edits", str(SAMPLE_EDITS)],
                          capture_output=True, text=True, timeout=300,
                          env=cloud.environ(cloud.principal("OnPremdemoUser")))
    assert done.returncode == 0, done.stderr[-3000:]


def _consume(cloud: IamCloud, principal: Principal) -> subprocess.CompletedProcess[str]:
    """The handler over what is on the event queue and the continue requests that leaves on
    the apply queue, as `principal`, in the function's deployed environment
    (tests/kit/sqs_lambda.py stands in for the function's two event source mappings)."""
    function = cloud.client("lambda").get_function_configuration(
        FunctionName=cloud.outputs["IngestFunctionName"])
    env = cloud.environ(principal) | function["Environment"]["Variables"] | {
        "POWERTOOLS_TRACE_DISABLED": "1"}
    return subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda",
                           cloud.outputs["EventQueueUrl"], cloud.outputs["ApplyQueueUrl"],
                           "--idle-polls", "2"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=REPO)


def _counts(stdout: str) -> dict[str, int]:
    """The runner's last line, "invocations=N records=N failures=N" (the handler's Powertools
    logs go to stdout before it)."""
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith("invocations=")]
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split())}


def _lake_keys(cloud: IamCloud, prefix: str) -> list[str]:
    listed = cloud.client("s3").list_objects_v2(Bucket=cloud.outputs["LakeBucketName"],
                                                Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def _run_jobs(cloud: IamCloud, principal: Principal,
              jobs: dict[str, list[str]]) -> subprocess.CompletedProcess[str]:
    """Both entry scripts, one after the other, as the workflow runs them."""
    return run_in_one_process([("glue_jobs.compact_events", jobs["compact"]),
                               ("glue_jobs.activity_rollups", jobs["rollups"])],
                              env=cloud.environ(principal))


def _s3a_probe(cloud: IamCloud) -> str:
    """The one denial a Glue job's run here may show: S3A's mkdirs probes each ancestor of
    Spark's output as a file (HEAD of the key "curated"), which the role may not read; refused as
    AWS would, and S3A goes on. Glue's own s3:// client is not S3A; no grant is added for a probe
    of the local runtime. As "<action> <resource>"."""
    return f"s3:GetObject arn:aws:s3:::{cloud.outputs['LakeBucketName']}/curated"


def _denied_calls(denials: list[str]) -> set[str]:
    """"<action> <resource>" of each denial line."""
    return {d.split(" (")[0].split(" ", 1)[1] for d in denials}


# An fsimage of cluster demo (tests/kit/fsimage_bytes.py's inodes, and so its times) that
# differs from the index the sample edit log left: /file_create kept with its mode changed to
# 0600, /directory_mkdir kept with a new child, /repaired new; the log's other paths
# (/file_moved, /file_concat_target, /file_symlink, ...) gone.
OWNER, GROUP = "hdfs", "supergroup"
FILE_MTIME, FILE_ATIME, DIR_MTIME = 1_700_000_000_123, 1_700_000_100_456, 1_700_000_000_000
ROOT, MKDIR, INNER, CREATE, REPAIRED, NEW = range(16_385, 16_391)
IMAGE_INODES = [inode_dir(ROOT, "", ns=(1 << 63) - 1), inode_dir(MKDIR, "directory_mkdir"),
                inode_file(INNER, "inner.csv", blocks=(10,)),
                inode_file(CREATE, "file_create", blocks=(512,), perm=permission(1, 2, 0o600)),
                inode_dir(REPAIRED, "repaired"), inode_file(NEW, "new.csv", blocks=(7, 5))]
IMAGE_CHILDREN = {ROOT: (MKDIR, CREATE, REPAIRED), MKDIR: (INNER,), REPAIRED: (NEW,)}
# What `hdfs-events index ls --json` shows of each path once the index is the image's.
ENTRY_FIELDS = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication")
_DIRECTORY = ("DIRECTORY", None, DIR_MTIME, 0, OWNER, GROUP, "0755", None)
IMAGE_ENTRIES = {
    "/directory_mkdir": _DIRECTORY,
    "/directory_mkdir/inner.csv": ("FILE", 10, FILE_MTIME, FILE_ATIME, OWNER, GROUP, "0644", 3),
    "/file_create": ("FILE", 512, FILE_MTIME, FILE_ATIME, OWNER, GROUP, "0600", 3),
    "/repaired": _DIRECTORY,
    "/repaired/new.csv": ("FILE", 12, FILE_MTIME, FILE_ATIME, OWNER, GROUP, "0644", 3),
}


def _namespace_image(txid: int) -> bytes:
    """The image of IMAGE_INODES under IMAGE_CHILDREN, of the last transaction `txid`."""
    directories = [v(1, parent) + b(2, b"".join(enc_varint(c) for c in children))
                   for parent, children in IMAGE_CHILDREN.items()]
    return image([
        ("NS_INFO", delimit(v(1, 7_000_001) + v(5, 1_073_741_900) + v(6, txid))),
        ("STRING_TABLE", string_table({1: OWNER, 2: GROUP})),
        ("INODE", delimit(v(1, NEW) + v(2, len(IMAGE_INODES)), *IMAGE_INODES)),
        ("INODE_DIR", delimit(*directories))])


def _applied_through(cloud: IamCloud) -> int:
    """N, the txid the consumer has applied the cluster's index through (all of it, no walk
    under way): where a gap repair takes over."""
    status = read_status(cloud.client("dynamodb"), cloud.outputs["IndexTableName"], CLUSTER)
    assert status.txid is not None and (status.index, status.walk) == (None, None), status
    return status.txid


def _index_items(cloud: IamCloud) -> dict[tuple[str, str], dict[str, Any]]:
    """Every item of the index table, by key, as the admin reads it."""
    pages = cloud.client("dynamodb").get_paginator("scan").paginate(
        TableName=cloud.outputs["IndexTableName"], ConsistentRead=True)
    return {(i[names.INDEX_PK]["S"], i[names.INDEX_SK]["S"]): i
            for page in pages for i in page["Items"]}


def _live_paths(cloud: IamCloud) -> list[str]:
    """The path of each live entry of the cluster, at every key (a copy at a second key counts
    twice)."""
    return sorted(i["path"]["S"] for (pk, _), i in _index_items(cloud).items()
                  if pk.startswith(names.index_partition(CLUSTER, ""))
                  and not i.get("deleted", {}).get("BOOL"))


def _repair_from_image(cloud: IamCloud, principal: Principal, arguments: list[str], after: int,
                       txid: int) -> subprocess.CompletedProcess[str]:
    """The image of `txid` uploaded by the on-prem user, as `fetch-image` does, then the
    inventory job's entry script as `principal` with the template's arguments and those the
    agent's gap repair adds: the cluster, the image and its checkpoint `after`."""
    lake, key = cloud.outputs["LakeBucketName"], fsimage_key(CLUSTER, txid)
    cloud.client("s3", cloud.principal(f"OnPrem{CLUSTER}User")).put_object(
        Bucket=lake, Key=key, Body=_namespace_image(txid))
    return run_in_one_process([("glue_jobs.namespace_inventory", [
        *arguments, "--cluster", CLUSTER, "--image", f"s3://{lake}/{key}",
        "--repair_after", str(after)])], env=cloud.environ(principal))


def _as_user_without(cloud: IamCloud, role: Principal, name: str, sid: str | None,
                     action: str) -> Principal:
    """A user holding what `role` holds, but `action` taken out of its statement `sid` (any
    statement granting it, when None)."""
    managed, inline = cloud.policies_of(role)
    (policy,) = inline  # CDK gathers a role's statements in its one default policy
    return cloud.user_holding(name, managed=managed, inline={
        policy: without_action(inline[policy], sid, action)})


@pytest.fixture(scope="module")
def consumed(cloud: IamCloud, work: Path) -> str:
    _replay(cloud, work)
    done = _consume(cloud, cloud.principal("ConsumerRole"))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_consumer_as_its_role_fills_the_lake_and_the_index(cloud: IamCloud,
                                                               consumed: str) -> None:
    counts = _counts(consumed)
    assert counts["records"] > 0 and counts["failures"] == 0, consumed[-3000:]
    assert _lake_keys(cloud, "raw/")
    assert _lake_keys(cloud, "quarantine/") == []
    index = cloud.client("dynamodb").scan(TableName=cloud.outputs["IndexTableName"])["Items"]
    assert any(item.get("name", {}).get("S") == "file_create" for item in index), index[:3]
    cloud.assert_nothing_denied()


def test_index_status_and_ls_as_an_operator(cloud: IamCloud, consumed: str) -> None:
    operator = cloud.user_holding("customer-operator",
                                  managed=[cloud.outputs["OperatorReadPolicyArn"]])
    table = cloud.outputs["IndexTableName"]
    status = subprocess.run([str(CLI), "index", "status", "--cluster", CLUSTER, "--table", table,
                             "--json"], capture_output=True, text=True, timeout=120,
                            env=cloud.environ(operator))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["waiting"] == 0, status.stdout
    listed = subprocess.run([str(CLI), "index", "ls", "/", "--cluster", CLUSTER, "--table", table],
                            capture_output=True, text=True, timeout=120,
                            env=cloud.environ(operator))
    assert listed.returncode == 0, listed.stderr
    assert "file_create" in listed.stdout
    cloud.assert_nothing_denied()


REDRIVE = """
import json, sys
from hdfs_events import envelope
envelope.SUPPORTED_VERSIONS = frozenset({1, 2})  # the consumer upgraded to envelope major 2
from lambdas.ingest import handler
from tests.kit.lambda_events import Context
print(json.dumps(handler.handler({"redrive": {"keys": json.loads(sys.argv[1])}}, Context())))
"""


def test_quarantine_redrive_as_an_operator_and_the_consumer_role(cloud: IamCloud,
                                                                  consumed: str) -> None:
    """A message of envelope major 2 from the on-prem user, quarantined by the consumer role;
    the operator's shipped redrive policy lists and reads it (`--dry-run`: moto runs a function
    only in Docker, so the consumer's redrive runs as its role in-process, as _consume does)."""
    events = [dataclasses.replace(e, cluster=CLUSTER, txid=e.txid + 100_000)
              for e in (mkdir(1, "/redriven"), mkfile(2, "/redriven/f"))]
    sent = next_agent_message(events, group_id=f"{CLUSTER}:redriven", major=2)
    cloud.client("sqs", cloud.principal(f"OnPrem{CLUSTER}User")).send_message(
        QueueUrl=cloud.outputs["EventQueueUrl"], MessageBody=sent.body,
        MessageGroupId=sent.group_id, MessageDeduplicationId=sent.dedup_id,
        MessageAttributes={"encoding": {"DataType": "String", "StringValue": sent.encoding}})
    assert _consume(cloud, cloud.principal("ConsumerRole")).returncode == 0
    (key,) = _lake_keys(cloud, "quarantine/ingest/")
    operator = cloud.user_holding("customer-redrive",
                                  managed=[cloud.outputs["QuarantineRedrivePolicyArn"]])

    listed = subprocess.run([str(CLI), "quarantine", "redrive", "--dry-run", "--cluster", CLUSTER,
                             "--bucket", cloud.outputs["LakeBucketName"]],
                            capture_output=True, text=True, timeout=120,
                            env=cloud.environ(operator))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(f"would redrive {key} cluster={CLUSTER} reason=unsupported "
                                    "envelope version 2"), listed.stdout
    function = cloud.client("lambda").get_function_configuration(
        FunctionName=cloud.outputs["IngestFunctionName"])
    env = cloud.environ(cloud.principal("ConsumerRole")) | function["Environment"][
        "Variables"] | {"POWERTOOLS_TRACE_DISABLED": "1"}
    done = subprocess.run([sys.executable, "-c", REDRIVE, json.dumps([key])], env=env,
                          capture_output=True, text=True, timeout=300, cwd=REPO)

    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(done.stdout.splitlines()[-1])["redrive"]
    assert (result["outcome"], result["index"]) == ("ingested", "pending"), result
    assert _lake_keys(cloud, "quarantine/ingest/") == []
    assert _lake_keys(cloud, "quarantine/redriven/") == [result["redriven_key"]]
    cloud.assert_nothing_denied()


def test_the_glue_jobs_as_the_glue_role(cloud: IamCloud, consumed: str,
                                        job_arguments: dict[str, list[str]]) -> None:
    ran = _run_jobs(cloud, cloud.principal("JobRole"), job_arguments)

    assert ran.returncode == 0, ran.stderr[-4000:]
    assert [r["job"] for r in reports(ran)] == ["compact_events", "activity_rollups"], ran.stdout
    assert any(k.startswith("curated/events/") and k.endswith(".parquet")
               for k in _lake_keys(cloud, "curated/events/"))
    assert any(k.endswith(".parquet") for k in _lake_keys(cloud, "curated/activity_daily/"))
    # The compaction registered its partitions through the Glue API, where Athena reads them.
    database = job_arguments["compact"][job_arguments["compact"].index("--catalog_database") + 1]
    partitions = cloud.client("glue").get_partitions(DatabaseName=database,
                                                     TableName="events")["Partitions"]
    assert partitions and {p["Values"][0] for p in partitions} == {CLUSTER}
    assert all("/run=" in p["StorageDescriptor"]["Location"] for p in partitions), partitions
    # S3A's mkdirs probes each ancestor of Spark's output as a file (HEAD of the key "curated"),
    # which the role may not read: refused as AWS would, and S3A goes on. Glue's own s3://
    # client is not S3A; no grant is added for a probe of the local runtime.
    assert _denied_calls(cloud.denials()) <= {_s3a_probe(cloud)}, cloud.denials()


def test_the_inventory_job_repairs_the_index_as_the_glue_role(
        cloud: IamCloud, consumed: str, job_arguments: dict[str, list[str]]) -> None:
    """A gap repair as the agent starts it: the index at the agent's checkpoint N, an image of
    T > N uploaded by the on-prem user, the inventory job's run with `--repair_after N`."""
    after = _applied_through(cloud)
    txid = after + 10
    table = cloud.outputs["IndexTableName"]
    before = _live_paths(cloud)
    gone = sorted(set(before) - set(IMAGE_ENTRIES))
    assert gone and set(IMAGE_ENTRIES) - set(before), before  # paths gone, paths new
    (changed,) = [e for e in _index_items(cloud).values()
                  if e.get("path") == {"S": "/file_create"}
                  and not e.get("deleted", {}).get("BOOL")]
    assert changed["perms"] != {"S": "0600"}, changed
    denied_before = len(cloud.denials())

    ran = _repair_from_image(cloud, cloud.principal("JobRole"), job_arguments["inventory"],
                             after, txid)

    assert ran.returncode == 0, ran.stderr[-4000:]
    (report,) = reports(ran)
    assert (report["job"], report["image_txid"], report["rows"]) == (
        "namespace_inventory", txid, 1 + len(IMAGE_ENTRIES)), report
    assert (report["index"]["repair_after"], report["index"]["txid"], report["index"]["entries"],
            report["index"]["removed"]) == (after, txid, len(IMAGE_ENTRIES),
                                            sum(p in gone for p in before)), report
    # What an operator sees: every directory's listing, the image's paths and attributes,
    # each entry at T; and no other live entry at any key, as the admin reads the table.
    operator = cloud.user_holding("inventory-operator",
                                  managed=[cloud.outputs["OperatorReadPolicyArn"]])
    listed: dict[str, dict[str, Any]] = {}
    for directory in ("/", "/directory_mkdir", "/repaired"):
        done = subprocess.run([str(CLI), "index", "ls", directory, "--json", "--cluster",
                               CLUSTER, "--table", table], capture_output=True, text=True,
                              timeout=120, env=cloud.environ(operator))
        assert done.returncode == 0, done.stderr
        listed |= {e["path"]: e for e in map(json.loads, done.stdout.splitlines())}
    assert {p: tuple(e[f] for f in ENTRY_FIELDS) for p, e in listed.items()} == IMAGE_ENTRIES
    assert {e["last_txid"] for e in listed.values()} == {txid}
    assert _live_paths(cloud) == sorted(IMAGE_ENTRIES)
    status = read_status(cloud.client("dynamodb"), table, CLUSTER)
    assert (status.txid, status.index, status.walk) == (txid, None, None), status
    marker = cloud.client("s3").get_object(Bucket=cloud.outputs["LakeBucketName"],
                                           Key=fsimage_indexed_key(CLUSTER, txid))
    assert json.loads(marker["Body"].read())["repair_after"] == after
    denied = cloud.denials()[denied_before:]
    assert _denied_calls(denied) <= {_s3a_probe(cloud)}, denied


def test_the_consumer_without_its_lake_write_grant_is_denied(cloud: IamCloud,
                                                             consumed: str) -> None:
    consumer = _as_user_without(cloud, cloud.principal("ConsumerRole"),
                                "consumer-without-lake-writes", "WriteLake", "s3:PutObject")
    # New edits from the on-prem user: the sample's again would carry the deduplication ids
    # SQS accepted minutes ago, and a FIFO queue drops those for 5 minutes.
    events = [dataclasses.replace(e, cluster=CLUSTER, txid=e.txid + 200_000)
              for e in (mkdir(1, "/denied"), mkfile(2, "/denied/f"))]
    sent = encode_message(events, group_id=f"{CLUSTER}:denied")
    cloud.client("sqs", cloud.principal(f"OnPrem{CLUSTER}User")).send_message(
        QueueUrl=cloud.outputs["EventQueueUrl"], MessageBody=sent.body,
        MessageGroupId=sent.group_id, MessageDeduplicationId=sent.dedup_id,
        MessageAttributes=sent.attributes)

    done = _consume(cloud, consumer)

    assert _counts(done.stdout)["failures"] > 0  # each batch fails; SQS will redeliver it
    denied = [d for d in cloud.denials() if consumer.access_key_id in d]
    assert denied and {d.split()[1] for d in denied} == {"s3:PutObject"}, cloud.denials()


def test_the_glue_jobs_without_the_lake_read_grant_are_denied(
        cloud: IamCloud, job_arguments: dict[str, list[str]]) -> None:
    job = _as_user_without(cloud, cloud.principal("JobRole"), "glue-without-lake-reads",
                           "ReadLake", "s3:GetObject")

    ran = _run_jobs(cloud, job, job_arguments)

    assert ran.returncode != 0
    assert "AccessDenied" in ran.stderr or "403" in ran.stderr, ran.stderr[-3000:]
    denied = [d for d in cloud.denials() if job.access_key_id in d]
    assert denied and {d.split()[1] for d in denied} == {"s3:GetObject"}, cloud.denials()


def test_the_inventory_job_without_its_scan_grant_is_denied(
        cloud: IamCloud, consumed: str, job_arguments: dict[str, list[str]]) -> None:
    """A repair reads the index's entries (the Scan) before it writes any
    (glue_jobs/image_index.py write_index: the position read, the Scan, then the writes and
    the position's move): denied, the run stops with the index, its position and the marker
    as they were, whether or not the repair above has run."""
    job = _as_user_without(cloud, cloud.principal("JobRole"), "glue-without-index-scan",
                           "WriteIndexFromImage", "dynamodb:Scan")
    after = _applied_through(cloud)
    txid = after + 20
    before = _index_items(cloud)
    denied_before = len(cloud.denials())

    ran = _repair_from_image(cloud, job, job_arguments["inventory"], after, txid)

    assert ran.returncode != 0
    assert "AccessDenied" in ran.stderr, ran.stderr[-3000:]
    table = cloud.client("dynamodb").describe_table(TableName=cloud.outputs["IndexTableName"])
    denied = cloud.denials()[denied_before:]
    assert _denied_calls(denied) - {_s3a_probe(cloud)} == {
        f"dynamodb:Scan {table['Table']['TableArn']}"}, denied
    assert _index_items(cloud) == before
    assert _lake_keys(cloud, fsimage_indexed_key(CLUSTER, txid)) == []


def test_the_glue_roles_own_catalog_grant_names_the_events_table_only(
        deployed: tuple[IamCloud, Assembly], job_arguments: dict[str, list[str]]) -> None:
    # The role's PublishPartitions statement alone, without AWSGlueServiceRole (glue:* on "*",
    # which the deployed role also holds, so its catalog calls never depend on the statement).
    # Read from the template: moto's CloudFormation skipped the Glue database, so the deployed
    # copy of the statement names the database by a Ref moto could not resolve.
    cloud, assembly = deployed
    (analytics,) = [s.template for s in assembly.stacks if s.name.endswith("-Analytics")]
    database = job_arguments["compact"][job_arguments["compact"].index("--catalog_database") + 1]
    account = cloud.admin.arn.split(":")[4]
    refs = pseudo_parameters(account, REGION) | {
        k: (r["Properties"].get("DatabaseInput") or r["Properties"]["TableInput"])["Name"]
        for k, r in analytics["Resources"].items()
        if r["Type"] in ("AWS::Glue::Database", "AWS::Glue::Table")}
    (statement,) = [st for r in analytics["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
                    for st in r["Properties"]["PolicyDocument"]["Statement"]
                    if st.get("Sid") == "PublishPartitions"]
    own = cloud.user_holding("glue-publish-partitions-only", inline={"own": {
        "Version": "2012-10-17", "Statement": [resolve(statement, refs)]}})
    cloud.client("glue").create_table(DatabaseName=database, TableInput={
        "Name": "not_ours", "StorageDescriptor": {"Columns": [{"Name": "x", "Type": "string"}]}})
    glue = cloud.client("glue", own)

    assert glue.get_table(DatabaseName=database, Name="events")["Table"]["Name"] == "events"
    with pytest.raises(ClientError):
        glue.get_table(DatabaseName=database, Name="not_ours")
    assert [d.split(" (")[0] for d in cloud.denials() if own.arn in d] == [
        f"{own.arn} glue:GetTable arn:aws:glue:{REGION}:{account}:table/{database}/not_ours"]
