"""`hdfs-events-agent sync` on a real NameNode into moto server S3: the initial listing, then
the live stream; a workload of temporary files renamed into place, appends, truncates,
overwrites, directory renames and deletes and metadata changes ends with the S3 prefix equal
to HDFS (keys, bytes, CRC32C, preserved metadata) and the uploads the merge rules predict; a
SIGKILL mid-copy leaves no partial object and no open multipart upload; purged edits (a GAP)
are repaired by the listing."""

from __future__ import annotations

import base64
import time

import boto3
import crc32c
import pytest
from botocore.config import Config

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.live.hadoop import HadoopClient, hadoop_configuration
from onprem_agent.sync.hdfs_files import CHECKSUM_CONF, HdfsFiles
from onprem_agent.sync.replica import S3_RETRIES, S3Replica
from onprem_agent.sync.replicator import Replicator
from onprem_agent.sync.settings import SyncSettings
from onprem_agent.sync.state import SyncState
from tests.kit.moto_s3_complete import complete_checks_full_object_crc32c
from tests.kit.s3_wire import S3Wire
from tests.kit.sync_agent import (
    SYNC_TABLE,
    create_sync_table,
    replicated_txid,
    start_sync,
    sync_command,
    sync_totals,
    wait_for_replication,
    write_sync_config,
)

CLUSTER = "prod"
BUCKET = "replica"


@pytest.fixture(autouse=True, scope="module")
def _complete_as_s3():
    """CompleteMultipartUpload checks and returns the full-object CRC32C, as S3's does (moto
    5.2's does neither): the requests counted below are the ones S3 would get."""
    with complete_checks_full_object_crc32c():
        yield


@pytest.fixture
def bucket(moto_endpoint: str) -> str:
    boto3.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    create_sync_table()
    return BUCKET


def text(name: str, size: int) -> str:
    """Distinct, non-repeating-enough content of `size` characters."""
    line = f"{name}:" + "".join(chr(48 + (i * 7 + len(name)) % 75) for i in range(97)) + "\n"
    return (line * (size // len(line) + 1))[:size]


def marker(hdfs, name: str) -> int:
    """An event outside the sync's paths; its txid is what the sync must reach."""
    hdfs.run([["mkdirs", f"/markers/{name}"]])
    return hdfs.txid()


def s3_objects(prefix: str) -> dict[str, dict]:
    s3, out = boto3.client("s3"), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for o in page.get("Contents", []):
            r = s3.get_object(Bucket=BUCKET, Key=o["Key"], ChecksumMode="ENABLED")
            body = r["Body"].read()
            out["/" + o["Key"][len(prefix):]] = {
                "body": body, "crc32c": r.get("ChecksumCRC32C"),
                "checksum_type": r.get("ChecksumType"), "meta": r["Metadata"]}
    return out


def assert_s3_equals_hdfs(hdfs, root: str, prefix: str) -> None:
    files = hdfs.run([["files", root]])[0]
    objects = s3_objects(prefix)
    assert sorted(objects) == sorted(files)
    for path, st in files.items():
        obj, data = objects[path], hdfs.run([["read", path]])[0].encode()
        assert obj["body"] == data, path
        want = base64.b64encode(crc32c.crc32c(data).to_bytes(4, "big")).decode()
        # A full-object CRC32C (moto names the type of multipart objects only).
        assert obj["crc32c"] == want and obj["checksum_type"] != "COMPOSITE", path
        assert obj["meta"] == {"hdfs-owner": st["owner"], "hdfs-group": st["group"],
                               "hdfs-permission": st["perms"],
                               "hdfs-replication": str(st["replication"]),
                               "hdfs-mtime": str(st["mtime"])}, path


def test_the_replica_equals_hdfs_after_a_live_workload_with_the_uploads_the_rules_predict(
        hdfs, bucket, tmp_path):
    root, dest = "/sync1", f"s3://{BUCKET}/mirror/"
    hdfs.run([["mkdirs", f"{root}/out"], ["write", f"{root}/old/a", text("a", 3000)],
              ["write", f"{root}/old/b", text("b", 100)],
              ["write", f"{root}/keep/c", text("c", 70_000)],
              # No blocks: HDFS gives its MD5 checksum whatever the combine mode.
              ["write", f"{root}/old/_SUCCESS", ""]])
    boto3.client("s3").put_object(Bucket=BUCKET, Key="mirror/sync1/ghost", Body=b"stale")
    config = write_sync_config(tmp_path / "sync", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[root],
                               sync_extra='ignore_patterns = ["\\\\.tmp$"]\nwindow_ms = 8000\n')
    sync = start_sync(config)
    try:
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "listed"))
        assert sync_totals(CLUSTER, dest)["uploads"] == 4  # the listing: a, b, c, _SUCCESS;
        # ghost deleted

        # One window (8 s from its first event: these seven calls took 1.5 s at load 7 on two
        # cores, where one close() can wait seconds for the block report): each temporary
        # file is uploaded once, under its final name.
        hdfs.run([
            ["write", f"{root}/out/.part-0.tmp", text("p0", 5000)],
            ["rename", f"{root}/out/.part-0.tmp", f"{root}/out/part-0"],
            ["write", f"{root}/out/_staging-1", text("p1", 4000)],
            ["rename", f"{root}/out/_staging-1", f"{root}/out/part-1"],
            ["write", f"{root}/junk/x", "x"], ["write", f"{root}/junk/y", "y"],
            ["delete", f"{root}/junk/x"]])
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "tmp"))
        assert sync_totals(CLUSTER, dest)["uploads"] == 4 + 3  # part-0, part-1, junk/y

        hdfs.run([["append", f"{root}/old/a", text("more", 500)],
                  ["truncate", f"{root}/keep/c", 40_001],
                  ["write", f"{root}/old/b", text("b2", 200), True]])
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "changed"))
        assert sync_totals(CLUSTER, dest)["uploads"] == 7 + 3

        hdfs.run([["rename", f"{root}/keep", f"{root}/kept"],  # moved server-side, no upload
                  ["delete", f"{root}/junk", True],
                  ["chmod", f"{root}/old/a", "0600"], ["chown", f"{root}/old/b", "alice", "staff"],
                  ["setrep", f"{root}/out/part-0", 2], ["set_times", f"{root}/out/part-1",
                                                         1_700_000_000_000, -1]])
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "moved"))
    finally:
        assert sync.stop() == 0, sync.log_tail()
    totals = sync_totals(CLUSTER, dest)
    assert totals["uploads"] == 10, sync.log_tail()
    assert totals["server_copies"] == 1 and totals["metadata_updates"] >= 3
    assert_s3_equals_hdfs(hdfs, root, "mirror/")
    verify = sync_command(config, "verify", "--prefix", root)
    assert verify.returncode == 0 and "6 files in HDFS, 6 checksums compared, 0 differ" in (
        verify.stdout), verify.stdout + verify.stderr
    status = sync_command(config, "status")
    assert "parked paths: 0" in status.stdout and "running window: none" in status.stdout


def test_a_sigkill_mid_copy_leaves_no_partial_object_and_no_open_upload(hdfs, bucket,
                                                                        tmp_path):
    root, dest = "/sync2", f"s3://{BUCKET}/mirror/"
    hdfs.run([["mkdirs", root]])
    config = write_sync_config(tmp_path / "sync", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[root],
                               sync_extra="part_size_mb = 5\nmultipart_threshold_mb = 5\n"
                                          "bandwidth_mb_s = 4\nwindow_ms = 200\n")
    sync = start_sync(config)
    wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "start"))
    big = text("big", 22 * 1024 * 1024)
    hdfs.run([["write", f"{root}/big", big]])
    s3 = boto3.client("s3")
    deadline = time.monotonic() + 60
    while not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads"):
        assert time.monotonic() < deadline, sync.log_tail()
        time.sleep(0.05)
    time.sleep(1.5)  # a part or two in
    sync.kill()
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="mirror/sync2/")
    assert s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")  # what the kill left

    config.write_text(config.read_text().replace("bandwidth_mb_s = 4", "bandwidth_mb_s = 0"))
    sync = start_sync(config)
    try:
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "restarted"))
    finally:
        assert sync.stop() == 0, sync.log_tail()
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    assert "aborted 1 multipart upload(s) left open" in sync.log.read_text()
    assert_s3_equals_hdfs(hdfs, root, "mirror/")


def test_purged_edits_during_sync_are_repaired_by_the_listing(hdfs, bucket, tmp_path):
    root, dest = "/sync3", f"s3://{BUCKET}/mirror/"
    hdfs.run([["write", f"{root}/a", "a"], ["write", f"{root}/b", "b"], ["write", f"{root}/c", "c"]])
    config = write_sync_config(tmp_path / "sync", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[root],
                               sync_extra="window_ms = 200\n")
    sync = start_sync(config)
    wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "first"))
    assert sync.stop() == 0, sync.log_tail()
    stopped_at = replicated_txid(CLUSTER, dest)
    assert stopped_at is not None

    # While the sync is down: changes it will never read, then checkpoints purge their edits.
    hdfs.run([["delete", f"{root}/a"], ["mkdirs", f"{root}/d"], ["rename", f"{root}/b", f"{root}/d/b"],
              ["write", f"{root}/c", "c2", True], ["write", f"{root}/e", "e"],
              ["chmod", f"{root}/e", "0600"]])
    hdfs.purge_edits_through(stopped_at + 1)

    sync = start_sync(config)
    try:
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "after-gap"))
    finally:
        assert sync.stop() == 0, sync.log_tail()
    assert "inotify gap" in sync.log.read_text()
    assert_s3_equals_hdfs(hdfs, root, "mirror/")
    verify = sync_command(config, "verify", "--prefix", root)
    assert verify.returncode == 0 and " 0 differ" in verify.stdout, verify.stdout + verify.stderr


def test_files_renamed_across_the_listing_while_it_runs_are_replicated(hdfs, bucket, tmp_path):
    """First start lists the tree one directory at a time (the NameNode has no atomic listing)
    while clients go on: a file moved from a directory not yet listed into one already listed
    is in neither listing, and its RENAME (after the listing's txid) moves no object. Files
    ping-pong between a shallow and a deep directory until the listing is done."""
    root, dest = "/sync4", f"s3://{BUCKET}/mirror/"
    deep = root + "".join(f"/l{i}" for i in range(40))
    names = [f"f{i:02d}" for i in range(20)]
    hdfs.run([["mkdirs", f"{root}/top"], ["mkdirs", deep],
              *(["write", f"{deep}/{n}", text(n, 100 + i)] for i, n in enumerate(names))])
    config = write_sync_config(tmp_path / "sync", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[root],
                               sync_extra="window_ms = 200\n")
    sync = start_sync(config)
    try:
        here, there, moves = deep, f"{root}/top", 0
        while "snapshot of the covered namespace" not in sync.log.read_text(errors="replace"):
            assert sync.process.poll() is None, sync.log_tail()
            hdfs.run([["rename", f"{here}/{n}", f"{there}/{n}"] for n in names])
            here, there, moves = there, here, moves + 1
        assert moves > 1  # the listing ran while files moved
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "pingpong"))
    finally:
        assert sync.stop() == 0, sync.log_tail()
    assert_s3_equals_hdfs(hdfs, root, "mirror/")


def test_a_file_renamed_away_and_replaced_by_an_open_file_before_its_copy_is_replicated(
        hdfs, bucket, tmp_path):
    """A window's copy runs against HDFS as it is now: /p was closed in the window, then renamed
    to /q and a new /p opened before the copy reached it. The copy finds a file open for write
    at /p; the RENAME in the next window must still bring /q."""
    root, dest = "/sync5", f"s3://{BUCKET}/mirror/"
    hdfs.run([["mkdirs", root]])
    config = write_sync_config(tmp_path / "sync", cluster=CLUSTER, uri=hdfs.uri,
                               conf_dir=hdfs.conf_dir, destination=dest, paths=[root],
                               sync_extra="part_size_mb = 5\nmultipart_threshold_mb = 5\n"
                                          "bandwidth_mb_s = 4\nwindow_ms = 1000\nworkers = 1\n")
    sync = start_sync(config)
    try:
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "start5"))
        # One window; workers = 1 copies in path order: /a (slow: 8 MiB at 4 MiB/s), then /p.
        hdfs.run([["write", f"{root}/a", text("a", 8 * 1024 * 1024)],
                  ["write", f"{root}/p", text("p", 1000)]])
        s3, deadline = boto3.client("s3"), time.monotonic() + 60
        while not s3.list_multipart_uploads(Bucket=BUCKET, Prefix="mirror/sync5/").get(
                "Uploads"):
            assert time.monotonic() < deadline, sync.log_tail()
            time.sleep(0.02)
        hdfs.run([["rename", f"{root}/p", f"{root}/q"], ["open_file", f"{root}/p", "new"]])
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "replaced"))
        hdfs.run([["close_file", f"{root}/p"]])
        wait_for_replication(sync, CLUSTER, dest, marker(hdfs, "closed"))
    finally:
        assert sync.stop() == 0, sync.log_tail()
    assert_s3_equals_hdfs(hdfs, root, "mirror/")


# -- appends: the replicator in this process (a Hadoop client in the `jvm` fixture's JVM), its
# S3 client's wire counted and tampered with (tests/kit/s3_wire.py) --------------------------

MIB = 1024 * 1024
APPEND_SETTINGS = dict(bucket=BUCKET, prefix="mirror/", table=SYNC_TABLE, ignore_patterns=(),
                       part_size=5 * MIB, multipart_threshold=5 * MIB, workers=1,
                       max_attempts=3)


@pytest.fixture(scope="module")
def hadoop(hdfs, jvm):
    client = HadoopClient(hdfs.uri, hadoop_configuration(CHECKSUM_CONF))
    yield client
    client.close()


class InProcessSync:
    """A Replicator over the module's NameNode; `window` applies events the test names (the
    APPEND and CLOSE an append logs), `wire` sees every S3 request it sends."""

    def __init__(self, hdfs, hadoop, root: str) -> None:
        settings = SyncSettings(paths=(root,), **APPEND_SETTINGS)
        s3 = boto3.client("s3", config=Config(retries=S3_RETRIES))
        self.wire = S3Wire(s3)
        self.replica = S3Replica(settings, s3)
        self.state = SyncState(SYNC_TABLE, CLUSTER, settings.destination)
        self.files = HdfsFiles(hadoop.file_system())
        self.replicator = Replicator(settings, hdfs=self.files,
                                     lister=hadoop.lister(), replica=self.replica,
                                     state=self.state, current_txid=hadoop.current_txid,
                                     sleep=lambda s: None)
        self.hdfs = hdfs

    def window(self, *events: tuple[EventType, str]) -> None:
        txid = self.hdfs.txid()
        self.replicator.apply_window(
            [HdfsEvent(CLUSTER, txid, i, kind, path,
                       size=None if kind is EventType.APPEND else self.files.status(path).size)
             for i, (kind, path) in enumerate(events)], txid)


def appended_file(hdfs, hadoop, root: str) -> tuple[InProcessSync, str, bytes]:
    """/root/log, 5 MiB + 256 KiB (the smallest size above S3's 5 MiB part minimum that the
    prefix copy needs), replicated; then 64 KiB appended to it in HDFS."""
    path, base, added = f"{root}/log", text("base", 5 * MIB + 256 * 1024), text("add", 64 * 1024)
    hdfs.run([["write", path, base]])
    sync = InProcessSync(hdfs, hadoop, root)
    sync.window((EventType.CLOSE, path))
    assert sync.replica.counters.bytes == len(base)
    hdfs.run([["append", path, added]])
    sync.wire.reset()
    return sync, path, added.encode()


def test_an_append_sends_only_the_new_bytes(hdfs, hadoop, bucket):
    sync, path, added = appended_file(hdfs, hadoop, "/sync6")
    before = sync.replica.counters.bytes
    sync.window((EventType.APPEND, path), (EventType.CLOSE, path))
    # The 64 KiB and the requests' own XML; a re-sent file would be 5.31 MiB.
    assert len(added) <= sync.wire.sent < len(added) + 4096, sync.wire.requests
    assert sync.replica.counters.bytes - before == len(added)
    # The by-hand 4 (the upload, its 2 parts, its completion, whose reply carries the stored
    # CRC32C) + 1: the HEAD that tells the object's size (where the new bytes start) and CRC32C.
    assert sync.wire.requests == {"HeadObject": 1, "CreateMultipartUpload": 1,
                                  "UploadPartCopy": 1, "UploadPart": 1,
                                  "CompleteMultipartUpload": 1}
    assert_s3_equals_hdfs(hdfs, "/sync6", "mirror/")
    assert sync.state.status().parked == []

    # An object whose bytes are not the file's first ones (written by someone else since) is
    # found out by the CRC32Cs before the upload completes: the file is uploaded whole.
    other = b"x" * (5 * MIB + 256 * 1024)
    boto3.client("s3").put_object(Bucket=BUCKET, Key="mirror/sync6/log", Body=other,
                                  ChecksumAlgorithm="CRC32C", ChecksumCRC32C=base64.b64encode(
                                      crc32c.crc32c(other).to_bytes(4, "big")).decode())
    hdfs.run([["append", path, "more"]])
    sync.wire.reset()
    sync.window((EventType.APPEND, path), (EventType.CLOSE, path))
    assert sync.wire.requests["AbortMultipartUpload"] == 1
    assert sync.wire.sent > 5 * MIB + 256 * 1024 + len(added)
    assert_s3_equals_hdfs(hdfs, "/sync6", "mirror/")

    # A writer holding the file open across windows: the APPEND in one, the CLOSE in the next.
    hdfs.run([["append", path, text("late", 10_000)]])
    sync.window((EventType.APPEND, path))
    sync.wire.reset()
    sync.window((EventType.CLOSE, path))
    assert 10_000 <= sync.wire.sent < 10_000 + 4096, sync.wire.requests
    assert_s3_equals_hdfs(hdfs, "/sync6", "mirror/")


def test_a_corrupted_part_of_an_append_is_never_accepted(hdfs, hadoop, bucket):
    sync, path, _ = appended_file(hdfs, hadoop, "/sync7")
    sync.wire.corrupt("UploadPart")  # one bit of the new bytes flipped on the way to S3
    sync.window((EventType.APPEND, path), (EventType.CLOSE, path))
    # S3 computes the object's CRC32C from the parts it got, which is not HDFS's, sent with
    # the completion: refused (BadDigest), no object written, the upload aborted; the retry
    # appends again and only the good bytes' object is ever readable.
    assert sync.wire.requests["CompleteMultipartUpload"] == 2
    assert sync.wire.requests["AbortMultipartUpload"] == 1
    assert "DeleteObject" not in sync.wire.requests
    assert sync.wire.requests["UploadPart"] == 2  # the corrupted one, then the same bytes
    assert sync.replica.counters.appends == 1
    assert_s3_equals_hdfs(hdfs, "/sync7", "mirror/")
    assert sync.state.status().parked == []


def test_s3_slow_down_on_parts_is_retried_for_that_part_and_counted(hdfs, hadoop, bucket):
    sync, path, added = appended_file(hdfs, hadoop, "/sync8")
    sync.wire.slow_down("UploadPartCopy", 1)
    sync.wire.slow_down("UploadPart", 2)
    sync.window((EventType.APPEND, path), (EventType.CLOSE, path))
    assert sync.wire.requests["UploadPartCopy"] == 1 + 1 and sync.wire.requests[
        "UploadPart"] == 2 + 1
    assert sync.wire.requests["CreateMultipartUpload"] == 1  # no step retried whole
    assert sync.replica.counters.retries == 3 and sync.replica.counters.appends == 1
    assert sync.wire.sent < 4 * len(added)
    assert_s3_equals_hdfs(hdfs, "/sync8", "mirror/")
