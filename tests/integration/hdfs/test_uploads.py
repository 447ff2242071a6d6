"""Uploads as Hadoop makes them, on a real NameNode, with the shipped example's [filter].

Hadoop's own shell (FsShell, run as alice and bob) and DistCp (run as carol) write files the way
they do on a cluster: `hdfs dfs -put` writes `x._COPYING_` (its CREATE names the owner, its
CLOSE the size) and renames it to `x`; DistCp renames `.distcp.tmp.*` files into place; `-rm -r`
moves to the user's trash or, with -skipTrash, deletes. The live agent ships all of it, the
consumer applies it, and then:

- the lake is exactly Hadoop's own stream (its Java reader, event for event, field for field);
- the index holds every file with HDFS's type, size and owner, and `verify` reports 0 drift;
- the rollups' activity counts each upload once, under its own directory, with its bytes and
  its owner, and no copy tool's rename as a user's rename;
- the sync, which ignores `._COPYING_` by default (never a partial file), still copies every
  upload once it has its own name: the replica equals HDFS.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from glue_jobs.file_sizes import DEFAULT_TRASH_PATTERN, measure_events, replayed
from glue_jobs.rollups import (
    UNKNOWN_OWNER,
    attribute_owners,
    daily_activity,
    hadoop_events,
    with_prefix,
)
from glue_jobs.schema import curated_schema
from hdfs_events import names
from hdfs_events.event import EventType
from onprem_agent.config import load_config
from tests.integration.hdfs.conftest import (
    CLUSTER,
    INDEX_TABLE,
    REPO,
    as_rows,
    consume,
    create_lake_and_index,
    java_rows,
    lake_events,
    verify,
)
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.edge import QUICK_START, write_edge_conf, write_hadoop_launcher
from tests.kit.live_agent import AgentProcess, write_agent_config
from tests.kit.sync_agent import (
    SYNC_TABLE,
    create_sync_table,
    start_sync,
    sync_command,
    wait_for_replication,
)

EXAMPLE = REPO / "onprem_agent" / "examples" / "agent.toml"
ROOT = "/uploads"
PUTS = {"alice": 60, "bob": 40}  # files each user uploads with one `hdfs dfs -put`: 100
DISTCP_USER = "carol"  # runs DistCp; everyone else copies with the shell
PREFIX_DEPTH = 2  # the rollups' default: /uploads/alice
REPLICA = "replica"
DESTINATION = f"s3://{REPLICA}/mirror/"


def sized(i: int) -> bytes:
    """Contents of a few bytes to a few KB, different for each file."""
    return (f"{i:04d}" * 1200)[: 1 + (i * 7919) % 4000].encode()


def write_local(directory: Path, names_sizes: dict[str, bytes]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in names_sizes.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(data)
        paths.append(directory / name)
    return paths


def example_filter() -> str:
    """The [filter] section of the shipped example config, as it is."""
    section = load_config(EXAMPLE).filter
    # JSON arrays of strings are TOML arrays of basic strings.
    return (f"[filter]\ncover_dirs = {json.dumps(list(section.cover_dirs))}\n"
            f"ignore_patterns = {json.dumps(list(section.ignore_patterns))}\n")


@dataclass
class Uploaded:
    config: Path
    sync_config: Path
    after_puts: dict[str, dict[str, Any]]  # the files below ROOT once the 100 puts ended
    puts_end: int  # the NameNode's txid then
    final: dict[str, dict[str, Any]]  # the files below ROOT at the end
    java: list[dict[str, Any]]  # Hadoop's Java reader over the whole run
    uploads: Counter[tuple[str, str]]  # (prefix, owner) -> files the tools wrote
    written: Counter[tuple[str, str]]  # (prefix, owner) -> bytes of those files
    user_renames: Counter[str]  # owner -> renames the users made themselves


@pytest.fixture(scope="module")
def uploaded(hdfs: HdfsCluster, moto_server: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Uploaded]:
    tmp = tmp_path_factory.mktemp("uploads")
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset",
                                                  method="POST"), timeout=30).read()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", moto_server)
        queue = boto3.client("sqs").create_queue(
            QueueName="uploads.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        create_lake_and_index()
        boto3.client("s3").create_bucket(
            Bucket=REPLICA, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        create_sync_table()
        yield run_uploads(hdfs, tmp, queue, moto_server)


def run_uploads(hdfs: HdfsCluster, tmp: Path, queue: str, moto_server: str) -> Uploaded:
    start = hdfs.txid()
    config = write_agent_config(
        tmp / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri, conf_dir=hdfs.conf_dir,
        checkpoint_txid=start,
        extra=example_filter() + f'[verify]\nindex_table = "{INDEX_TABLE}"\n')
    # The sync with the same [filter] and its own defaults (no ignore_patterns of its own).
    sync_config = write_agent_config(
        tmp / "sync", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri, conf_dir=hdfs.conf_dir,
        extra=example_filter() + f'[sync]\ndestination = "{DESTINATION}"\n'
        f'table = "{SYNC_TABLE}"\npaths = ["{ROOT}"]\n')
    local = tmp / "local"
    puts = {user: write_local(local / user, {f"f{i:03d}": sized(i + 100 * n)
                                             for i in range(count)})
            for n, (user, count) in enumerate(PUTS.items())}
    logs = write_local(local / "logs", {f"log{i}": sized(300 + i) for i in range(5)})
    batch = write_local(local / "batch", {f"b{i}": sized(400 + i) for i in range(5)})
    again = write_local(local / "again", {"f010": sized(500)})
    distcp_src = local / "dc"
    write_local(distcp_src, {f"d{i}": sized(600 + i) for i in range(4)} | {"sub/e": sized(700)})

    agent = AgentProcess.start(config)
    sync: AgentProcess | None = None
    try:
        hdfs.run([["mkdirs", f"{ROOT}/{user}"] for user in (*PUTS, DISTCP_USER)]
                 + [["chown", f"{ROOT}/{user}", user, None] for user in (*PUTS, DISTCP_USER)]
                 # Home directories: `-rm -r` moves into /user/<user>/.Trash.
                 + [["mkdirs", f"/user/{user}"] for user in PUTS]
                 + [["chown", f"/user/{user}", user, None] for user in PUTS])
        sync = start_sync(sync_config)
        wait_for_replication(sync, CLUSTER, DESTINATION, marker(hdfs, "listed"))
        hdfs.run([["shell", user, ["-put", *map(str, files), f"{ROOT}/{user}/"]]
                  for user, files in puts.items()])
        puts_end = hdfs.txid()
        [after_puts] = hdfs.run([["files", ROOT]])
        hdfs.run([
            ["shell", "alice", ["-mkdir", f"{ROOT}/alice/moved"]],
            ["shell", "alice", ["-mv", f"{ROOT}/alice/f000", f"{ROOT}/alice/f001",
                                f"{ROOT}/alice/moved/"]],
            # Put, then moved, then deleted: still alice's (an upload's end is no rename hop).
            ["shell", "alice", ["-rm", "-skipTrash", f"{ROOT}/alice/moved/f001"]],
            ["shell", "alice", ["-put", str(local / "logs"), f"{ROOT}/alice/logs"]],
            ["shell", "alice", ["-rm", "-r", f"{ROOT}/alice/logs"]],  # to alice's trash
            ["shell", "alice", ["-cp", f"{ROOT}/bob/f011", f"{ROOT}/alice/copy-of-f011"]],
            ["shell", "bob", ["-copyFromLocal", str(local / "batch"), f"{ROOT}/bob/batch"]],
            ["shell", "bob", ["-rm", "-r", "-skipTrash", f"{ROOT}/bob/batch"]],
            ["shell", "bob", ["-copyFromLocal", "-f", str(again[0]), f"{ROOT}/bob/f010"]],
        ])
        distcp(hdfs, tmp, moto_server, distcp_src, f"{ROOT}/{DISTCP_USER}/dc", user=DISTCP_USER)
        end = marker(hdfs, "done")
        java = hdfs.java_events(start, end)
        agent.wait_for_checkpoint(java[-1]["txid"])
        wait_for_replication(sync, CLUSTER, DESTINATION, end)
    finally:
        assert agent.stop() == 0, agent.log_tail()
        if sync is not None:
            assert sync.stop() == 0, sync.log_tail()
    [final] = hdfs.run([["files", ROOT]])
    consume(queue, [ROOT])

    # What each user uploaded, by the directory prefix it landed in (what the rollups group by).
    bob_f011 = puts["bob"][11].read_bytes()
    by_upload: list[tuple[str, str, int]] = (
        [(f"{ROOT}/{u}", u, len(p.read_bytes())) for u, files in puts.items() for p in files]
        + [(f"{ROOT}/alice", "alice", len(p.read_bytes())) for p in logs]
        + [(f"{ROOT}/alice", "alice", len(bob_f011))]
        + [(f"{ROOT}/bob", "bob", len(p.read_bytes())) for p in [*batch, *again]]
        + [(f"{ROOT}/{DISTCP_USER}", DISTCP_USER, len(p.read_bytes()))
           for p in distcp_src.rglob("*") if p.is_file()])
    written: Counter[tuple[str, str]] = Counter()
    for prefix, owner, size in by_upload:
        written[prefix, owner] += size
    return Uploaded(
        config=config, sync_config=sync_config, after_puts=after_puts, puts_end=puts_end,
        final=final, java=java, written=written,
        uploads=Counter((prefix, owner) for prefix, owner, _ in by_upload),
        # alice moved two files; sending a directory to her trash is a delete, no rename, and
        # the copy tools' own renames (._COPYING_, .distcp.tmp) are nobody's.
        user_renames=Counter({"alice": 2}))


def marker(hdfs: HdfsCluster, name: str) -> int:
    """An event outside the covered tree; its txid is what the sync must reach."""
    hdfs.run([["mkdirs", f"/markers/{name}"]])
    return hdfs.txid()


def distcp(hdfs: HdfsCluster, tmp: Path, moto_server: str, src: Path, dst: str, *,
           user: str) -> None:
    """Hadoop's DistCp (local job runner, an edge node's JVM) as `user` (simple auth)."""
    conf = write_edge_conf(hdfs.conf_dir, tmp / "edge-conf", s3_endpoint=moto_server,
                           region="eu-west-1")
    hadoop = write_hadoop_launcher(tmp / "bin", conf, java_options=QUICK_START)
    done = subprocess.run([str(hadoop), "distcp", src.as_uri(), f"{hdfs.uri}{dst}"],
                          env={**os.environ, "HADOOP_USER_NAME": user}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_lake_is_hadoops_own_stream_with_every_temporary_file(uploaded):
    # Up to the marker, Hadoop's last event: at a full hour the NameNode's trash emptier
    # renames alice's .Trash/Current, an event of its own after the workload's.
    lake = [e for e in lake_events() if e.txid <= uploaded.java[-1]["txid"]]
    assert as_rows(lake) == java_rows(uploaded.java)
    copying = [e for e in lake if e.path.endswith("._COPYING_")]
    # Each upload by the shell: CREATE and CLOSE of x._COPYING_, then its rename to x.
    shell_uploads = sum(n for (_, owner), n in uploaded.uploads.items() if owner != DISTCP_USER)
    assert Counter(e.type for e in copying) == {
        EventType.CREATE: shell_uploads, EventType.CLOSE: shell_uploads,
        EventType.RENAME: shell_uploads}


def index_entry(path: str) -> dict[str, Any] | None:
    parent, name = names.split_path(path)
    item = boto3.client("dynamodb").get_item(TableName=INDEX_TABLE, Key={
        names.INDEX_PK: {"S": names.index_partition(CLUSTER, parent)},
        names.INDEX_SK: {"S": name}}).get("Item")
    if item is None or item.get("deleted", {}).get("BOOL"):
        return None
    return {"type": item.get("type", {}).get("S"), "owner": item.get("owner", {}).get("S"),
            "size": int(item["size"]["N"]) if "size" in item else None}


def test_the_index_holds_every_file_as_hdfs_does_and_verify_finds_no_drift(uploaded):
    # The puts but one deleted, the -cp and DistCp's five (the rest trashed or deleted).
    assert len(uploaded.final) == sum(PUTS.values()) - 1 + 1 + 5
    for path, status in sorted(uploaded.final.items()):
        assert index_entry(path) == {"type": "FILE", "owner": status["owner"],
                                     "size": status["length"]}, path
    # Gone from the covered tree: the trash's and -skipTrash's, and the temporary names.
    for path in (f"{ROOT}/alice/logs", f"{ROOT}/alice/logs/log0", f"{ROOT}/bob/batch/b0",
                 f"{ROOT}/alice/f000", f"{ROOT}/alice/f002._COPYING_"):
        assert index_entry(path) is None, path
    result = verify(uploaded.config, ROOT)
    assert result.returncode == 0 and " 0 differ" in result.stdout, (
        result.stdout + result.stderr)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("uploads")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


PUTS_DAY, LATER_DAY = "2026-11-25", "2026-11-26"


@pytest.fixture(scope="module")
def activity(uploaded, spark) -> dict[str, dict[tuple[str, str], dict[str, int]]]:
    """The rollups' activity of the lake's events (the job's transforms, in the job's order),
    the 100 puts as one day and the rest as the next: {dt: {(prefix, owner): counters}}. One
    Spark job for both days; owners of the second day's events come from the first's."""
    rows = []
    for e in lake_events():
        row: dict[str, Any] = {**e.to_dict(),
                               "dt": PUTS_DAY if e.txid <= uploaded.puts_end else LATER_DAY}
        for key in ("type", "inode_type", "metadata_type"):
            row[key] = None if row[key] is None else str(row[key].value)
        rows.append(row)
    curated = spark.createDataFrame(rows, curated_schema())
    measures = replayed(curated, None, DEFAULT_TRASH_PATTERN)
    out = (curated.transform(hadoop_events).transform(attribute_owners(curated))
           .transform(with_prefix(PREFIX_DEPTH))
           .transform(measure_events(measures))
           .transform(daily_activity(1_048_576)))
    days: dict[str, dict[tuple[str, str], dict[str, int]]] = {PUTS_DAY: {}, LATER_DAY: {}}
    for r in out.collect():
        days[r["dt"]][(r["prefix"], r["owner"])] = r.asDict()
    return days


def test_the_rollups_count_each_put_once_with_its_bytes_and_owner(uploaded, activity):
    want: dict[tuple[str, str], dict[str, int]] = {}
    for path, status in uploaded.after_puts.items():
        counts = want.setdefault((path.rsplit("/", 1)[0], status["owner"]),
                                 {"files_created": 0, "bytes_written": 0})
        counts["files_created"] += 1
        counts["bytes_written"] += status["length"]
    assert len(uploaded.after_puts) == sum(PUTS.values())
    assert {key: {"files_created": row["files_created"], "bytes_written": row["bytes_written"],
                  "files_renamed": row["files_renamed"]}
            for key, row in activity[PUTS_DAY].items()} == {
        key: {**counts, "files_renamed": 0} for key, counts in want.items()}


def test_the_rollups_count_every_copy_tools_upload_and_only_users_renames(uploaded, activity):
    both: dict[str, Counter[Any]] = {"files_created": Counter(), "bytes_written": Counter(),
                                     "files_renamed": Counter()}
    for day in activity.values():
        for (prefix, owner), row in day.items():
            assert owner != UNKNOWN_OWNER, row
            both["files_created"][prefix, owner] += row["files_created"]
            both["bytes_written"][prefix, owner] += row["bytes_written"]
            both["files_renamed"][owner] += row["files_renamed"]
    assert +both["files_created"] == uploaded.uploads
    assert +both["bytes_written"] == uploaded.written
    assert +both["files_renamed"] == uploaded.user_renames


def test_the_sync_copies_every_upload_once_under_its_own_name(uploaded):
    s3, replica = boto3.client("s3"), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=REPLICA, Prefix="mirror/"):
        replica |= {"/" + o["Key"][len("mirror/"):]: o["Size"] for o in page.get("Contents", [])}
    assert replica == {path: status["length"] for path, status in uploaded.final.items()}
    verify = sync_command(uploaded.sync_config, "verify", "--prefix", ROOT)
    assert verify.returncode == 0 and " 0 differ" in verify.stdout, verify.stdout + verify.stderr
