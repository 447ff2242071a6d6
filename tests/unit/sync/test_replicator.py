"""The replicator's rules on its own: a copy whose bytes disagree with HDFS's checksum is retried,
then parked and alarmed, never accepted; a poison path is parked at once; a path gone since its
event is carried as pending; a later good copy unparks. S3 and DynamoDB are moto in-process; the
HDFS side is a double (the real one needs a NameNode: tests/integration/hdfs/test_sync.py), the
CRCs are the agent's own (Java CRC32C in the `jvm` fixture's JVM)."""

from __future__ import annotations

import threading
import time

import crc32c
import pytest
from moto import mock_aws

from hdfs_events.event import EventType, HdfsEvent, INodeType
from onprem_agent.live.snapshot import NamespaceEntry
from onprem_agent.source import TxBatch
from onprem_agent.sync.hdfs_files import FileChecksum, FileGone
from onprem_agent.sync.replica import S3Replica, crc_b64
from onprem_agent.sync.replicator import (
    Replicator,
    WindowFigures,
    Windows,
    WindowTurns,
    progress_metrics,
    sync_metrics,
)
from onprem_agent.sync.settings import SyncSettings
from onprem_agent.sync.state import SyncState
from tests.kit.sync_agent import SYNC_TABLE, create_sync_table

SETTINGS = SyncSettings(bucket="replica", prefix="m/", table=SYNC_TABLE, paths=("/c",),
                        ignore_patterns=(), workers=1, max_attempts=3)


class HdfsFilesDouble:
    """HdfsFiles over a dict; `checksums` overrides what HDFS reports for a path; `dirs` are
    directories."""

    def __init__(self, jvm, files: dict[str, bytes]) -> None:
        self.jvm, self.files, self.checksums, self.dirs = jvm, files, {}, set()

    def status(self, path):
        if path in self.dirs:
            return NamespaceEntry(path, INodeType.DIRECTORY, owner="etl", group="hadoop",
                                  perms="0755")
        data = self.files.get(path)
        return None if data is None else NamespaceEntry(
            path, INodeType.FILE, size=len(data), mtime=7, owner="etl", group="hadoop",
            perms="0640", replication=3)

    def is_file(self, entry):
        return entry is not None and entry.inode_type is INodeType.FILE

    def status_now(self, path):
        return self.status(path), True

    def checksum(self, path):
        if path not in self.files:
            raise FileGone(path)
        return self.checksums.get(path) or FileChecksum("COMPOSITE-CRC32C",
                                                        crc32c.crc32c(self.files[path]))

    def read(self, path, chunk=4, *, start=0):
        data = self.files[path]
        for i in range(start, len(data), chunk):
            part = data[i:i + chunk]
            yield self.jvm.JArray(self.jvm.JByte)(part), len(part)


@pytest.fixture
def aws():
    with mock_aws():
        import boto3

        boto3.client("s3").create_bucket(
            Bucket="replica", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        create_sync_table()
        yield boto3.client("s3")


def replicator(jvm, files, alarms, windows=None):
    hdfs = HdfsFilesDouble(jvm, files)
    state = SyncState(SYNC_TABLE, "prod", SETTINGS.destination)
    r = Replicator(SETTINGS, hdfs=hdfs, lister=None, replica=S3Replica(SETTINGS), state=state,
                   current_txid=lambda: 0,
                   on_park=lambda p, why: alarms.append((p, why)), sleep=lambda s: None,
                   on_window=None if windows is None else windows.append)
    return r, hdfs, state


def closed(txid: int, path: str) -> HdfsEvent:
    return HdfsEvent("prod", txid, 0, EventType.CLOSE, path, size=1)


def test_a_checksum_mismatch_is_retried_then_parked_and_alarmed_never_accepted(jvm, aws):
    alarms: list = []
    r, hdfs, state = replicator(jvm, {"/c/a": b"hello world"}, alarms)
    hdfs.checksums["/c/a"] = FileChecksum("COMPOSITE-CRC32C", 12345)
    r.apply_window([closed(5, "/c/a")], 5)
    assert "Contents" not in aws.list_objects_v2(Bucket="replica")
    [parked] = state.status().parked
    assert (parked.path, parked.attempts, parked.txid) == ("/c/a", 3, 5)
    assert "ChecksumMismatch" in parked.reason and "00003039" in parked.reason
    assert [p for p, _ in alarms] == ["/c/a"]
    assert state.status().txid == 5  # a parked path does not hold the stream back

    del hdfs.checksums["/c/a"]  # the next event on the path copies it and unparks it
    r.apply_window([closed(6, "/c/a")], 6)
    assert aws.get_object(Bucket="replica", Key="m/c/a")["Body"].read() == b"hello world"
    assert state.status().parked == []


def test_a_poison_path_is_parked_at_the_first_attempt(jvm, aws):
    alarms: list = []
    r, hdfs, state = replicator(jvm, {"/c/a": b"x"}, alarms)
    hdfs.checksums["/c/a"] = FileChecksum("MD5-of-0MD5-of-512CRC32C", 1)
    r.apply_window([closed(5, "/c/a")], 5)
    [parked] = state.status().parked
    assert parked.attempts == 1 and "COMPOSITE_CRC" in parked.reason


def test_a_path_gone_since_its_event_is_pending_until_its_rename_arrives(jvm, aws):
    r, _, state = replicator(jvm, {"/c/b": b"data"}, [])
    r.apply_window([closed(5, "/c/a")], 5)  # /c/a was renamed to /c/b after txid 5
    assert state.status().pending == {"/c/a": "copy"}
    r.apply_window([HdfsEvent("prod", 6, 0, EventType.RENAME, "/c/a", dst_path="/c/b")], 6)
    assert state.status().pending == {}
    obj = aws.get_object(Bucket="replica", Key="m/c/b", ChecksumMode="ENABLED")
    assert obj["Body"].read() == b"data"
    assert obj["Metadata"] == {"hdfs-owner": "etl", "hdfs-group": "hadoop",
                               "hdfs-permission": "0640", "hdfs-replication": "3",
                               "hdfs-mtime": "7"}


def test_a_copy_finding_a_directory_is_pending_a_directorys_metadata_change_is_not(jvm, aws):
    """CLOSE of /c/a, then /c/a renamed away and a directory made in its place before the copy:
    pending until the next window says where the file went. A chmod of a directory has no
    object to update and nothing to wait for."""
    r, hdfs, state = replicator(jvm, {}, [])
    hdfs.dirs.update({"/c/a", "/c/d"})
    r.apply_window([closed(5, "/c/a"),
                    HdfsEvent("prod", 6, 0, EventType.METADATA, "/c/d", perms="0700")], 6)
    assert state.status().pending == {"/c/a": "copy"}
    r.apply_window([HdfsEvent("prod", 7, 0, EventType.CREATE, "/c/a",
                              inode_type=INodeType.DIRECTORY, overwrite=False)], 7)
    assert state.status().pending == {}


def test_each_window_reports_its_lag_bytes_and_parked_paths_as_cloudwatch_data(jvm, aws):
    import time

    import boto3

    windows: list[WindowFigures] = []
    r, _, _ = replicator(jvm, {"/c/a": b"12345"}, [], windows)
    ten_s_ago = int(time.time() * 1000) - 10_000
    r.apply_window([HdfsEvent("prod", 5, 0, EventType.CLOSE, "/c/a", size=5,
                              timestamp=ten_s_ago)], 5)
    [figures] = windows
    assert (figures.txid, figures.bytes, figures.uploads, figures.parked) == (5, 5, 1, 0)
    assert 10 <= figures.lag_s < 60
    cloudwatch = boto3.client("cloudwatch")
    cloudwatch.put_metric_data(Namespace="HdfsEvents", MetricData=sync_metrics("prod", figures))
    listed = {m["MetricName"] for m in cloudwatch.list_metrics(Namespace="HdfsEvents")["Metrics"]}
    assert listed == {"SyncBytesCopied", "SyncParkedPaths", "SyncLagSeconds", "SyncS3Retries"}


def test_the_lag_in_bytes_is_what_gathered_and_running_windows_still_have_to_copy(jvm, aws):
    import time

    import boto3

    r, hdfs, _ = replicator(jvm, {"/c/a": b"a" * 30, "/c/b": b"b" * 12}, [])
    windows = Windows(r, SETTINGS, clock=lambda: 0.0)  # never due: flushed by hand
    r.stats.replicated_txid = 1  # not a first start: no listing
    ten_s_ago = int(time.time() * 1000) - 10_000
    windows.add(TxBatch(2, (HdfsEvent("prod", 2, 0, EventType.CLOSE, "/c/a", size=30,
                                      timestamp=ten_s_ago),)))
    windows.add(TxBatch(3, (HdfsEvent("prod", 3, 0, EventType.CLOSE, "/c/b", size=12),)))
    assert windows.bytes_pending() == 42 and windows.oldest_unapplied_ms() == ten_s_ago

    seen = []  # what a heartbeat reads while each file is being read
    read = hdfs.read

    def reading(path, chunk=4, *, start=0):
        seen.append((path, windows.bytes_pending()))
        yield from read(path, chunk, start=start)

    hdfs.read = reading
    windows.flush()
    assert seen == [("/c/a", 42), ("/c/b", 12)]  # steps run one at a time (workers=1)
    assert windows.bytes_pending() == 0 and windows.oldest_unapplied_ms() is None

    windows.add(TxBatch(4, (HdfsEvent("prod", 4, 0, EventType.CLOSE, "/c/a", size=30,
                                      timestamp=ten_s_ago),)))
    data = progress_metrics("prod", windows, time.time())
    cloudwatch = boto3.client("cloudwatch")
    cloudwatch.put_metric_data(Namespace="HdfsEvents", MetricData=data)
    assert {d["MetricName"]: d["Value"] for d in data}["SyncBytesPending"] == 30
    assert 10 <= {d["MetricName"]: d["Value"] for d in data}["SyncLagSeconds"] < 60
    listed = {m["MetricName"] for m in cloudwatch.list_metrics(Namespace="HdfsEvents")["Metrics"]}
    assert listed == {"SyncBytesPending", "SyncLagSeconds"}


def test_a_rename_over_copy_objects_limit_is_a_multipart_copy_inside_s3(jvm, aws):
    data = bytes(range(256)) * (12 * 4096)  # 12 MiB
    r, hdfs, _ = replicator(jvm, {"/c/big": data}, [])
    # S3's limit is 5 GiB; here 1 MiB, so 12 MiB is "over" it and copied in 5 MiB parts.
    r.replica = S3Replica(SETTINGS, copy_object_limit=2**20, copy_part_size=5 * 2**20)
    read = hdfs.read
    hdfs.read = lambda path, chunk=2**20, start=0: read(path, chunk, start=start)
    r.apply_window([closed(5, "/c/big")], 5)

    calls: list[str] = []
    r.replica.s3.meta.events.register("before-call.s3.*",
                                      lambda model, **_: calls.append(model.name))
    hdfs.read = lambda path, chunk=2**20, start=0: pytest.fail(f"{path} read from HDFS again")
    hdfs.files["/c/moved"] = hdfs.files.pop("/c/big")
    r.apply_window([HdfsEvent("prod", 6, 0, EventType.RENAME, "/c/big", dst_path="/c/moved")], 6)

    assert calls.count("UploadPartCopy") == 3 and "CopyObject" not in calls
    assert not {"PutObject", "UploadPart"} & set(calls)
    obj = aws.get_object(Bucket="replica", Key="m/c/moved", ChecksumMode="ENABLED")
    assert obj["Body"].read() == data
    assert obj["ChecksumCRC32C"] == crc_b64(crc32c.crc32c(data))
    assert obj["Metadata"]["hdfs-owner"] == "etl" and obj["Metadata"]["hdfs-mtime"] == "7"
    assert "Contents" not in aws.list_objects_v2(Bucket="replica", Prefix="m/c/big")
    assert not aws.list_multipart_uploads(Bucket="replica").get("Uploads")
    assert r.replica.counters.server_copies == 1


def test_a_window_that_relists_moves_listed_through_to_where_its_relists_ended(jvm, aws):
    """A relist walks HDFS after the window, maybe after a later rename took a file out of its
    root: that rename (a txid up to the NameNode's when the relists ended) relists its
    destination, as one that crossed the first listing does."""
    hdfs = HdfsFilesDouble(jvm, {})  # /c/d is gone by the time the relist runs: pending
    state = SyncState(SYNC_TABLE, "prod", SETTINGS.destination)
    r = Replicator(SETTINGS, hdfs=hdfs, lister=None, replica=S3Replica(SETTINGS), state=state,
                   current_txid=lambda: 40, on_park=lambda p, why: None, sleep=lambda s: None)
    into = HdfsEvent("prod", 20, 0, EventType.RENAME, "/out/d", dst_path="/c/d")
    assert r.apply_window([into], 20).relists == ("/c/d",)
    assert state.status().listed_through == 40
    out = HdfsEvent("prod", 30, 0, EventType.RENAME, "/c/d/a", dst_path="/c/b")
    assert r.apply_window([out], 30).relists == ("/c/b", "/c/d")


def test_a_long_copy_runs_beside_the_next_windows_and_a_rename_of_it_waits_for_it(jvm, aws):
    import dataclasses
    import threading

    settings = dataclasses.replace(SETTINGS, long_copy_bytes=16)
    hdfs = HdfsFilesDouble(jvm, {"/c/big": b"b" * 32, "/c/small": b"s" * 8})
    state = SyncState(SYNC_TABLE, "prod", settings.destination)
    r = Replicator(settings, hdfs=hdfs, lister=None, replica=S3Replica(settings), state=state,
                   current_txid=lambda: 0, on_park=lambda p, why: None, sleep=lambda s: None)
    gate, opened = threading.Event(), threading.Event()

    def slow(path, chunk=4, *, start=0):
        data = hdfs.files[path]  # an open stream reads on after a rename, as HDFS's does
        if path == "/c/big":
            opened.set()
            assert gate.wait(30)
        for i in range(start, len(data), chunk):
            yield jvm.JArray(jvm.JByte)(data[i:i + chunk]), len(data[i:i + chunk])

    hdfs.read = slow
    r.apply_window([closed(5, "/c/big")], 5)  # returns while /c/big is still being read
    assert state.status().txid == 5 and state.status().pending == {"/c/big": "copy"}
    r.apply_window([closed(6, "/c/small")], 6)
    keys = {o["Key"] for o in aws.list_objects_v2(Bucket="replica").get("Contents", [])}
    assert keys == {"m/c/small"}

    threading.Timer(0.2, gate.set).start()
    # The copy runs on its own thread: the rename comes once it has opened the file (before,
    # the file is gone when it opens it: a flake, 1 run in 3 on 2 cores).
    assert opened.wait(30)
    hdfs.files["/c/moved"] = hdfs.files.pop("/c/big")
    r.apply_window([HdfsEvent("prod", 7, 0, EventType.RENAME, "/c/big", dst_path="/c/moved")], 7)
    keys = {o["Key"] for o in aws.list_objects_v2(Bucket="replica").get("Contents", [])}
    assert keys == {"m/c/small", "m/c/moved"}  # the copy ended, then the rename moved it
    assert aws.get_object(Bucket="replica", Key="m/c/moved")["Body"].read() == b"b" * 32
    assert state.status().pending == {} and r.replica.counters.server_copies == 1


class _Applied:
    """The replicator as Windows sees it: what it was handed, window by window."""

    resume_after = 1  # not a first start: no listing

    def __init__(self) -> None:
        self.windows: list[list[str]] = []

    def apply_window(self, events, last_txid) -> None:
        self.windows.append([e.path for e in events])


def test_a_window_is_due_once_its_events_span_window_ms_of_namenode_time():
    # Events read together after a long window: the oldest has waited window_ms already.
    applied = _Applied()
    windows = Windows(applied, SETTINGS, clock=lambda: 0.0)  # no time passes here
    windows.add(TxBatch(2, (HdfsEvent("prod", 2, 0, EventType.CLOSE, "/c/a", timestamp=5_000),)))
    windows.add(TxBatch(3, (HdfsEvent("prod", 3, 0, EventType.APPEND, "/c/b"),)))
    windows.add(TxBatch(4, (HdfsEvent("prod", 4, 0, EventType.CLOSE, "/c/b", timestamp=5_999),)))
    assert applied.windows == []
    windows.add(TxBatch(5, (HdfsEvent("prod", 5, 0, EventType.CLOSE, "/c/c", timestamp=6_000),)))
    assert applied.windows == [["/c/a", "/c/b", "/c/b", "/c/c"]]
    windows.add(TxBatch(6, (HdfsEvent("prod", 6, 0, EventType.CLOSE, "/c/d", timestamp=6_100),)))
    assert len(applied.windows) == 1  # a new window, its own span


def test_a_long_copy_waits_while_a_window_runs_and_never_longer_than_the_windows_share():
    turns = WindowTurns(share_s=10.0)  # far longer than a loaded machine's wake-up delay
    ended: list[float] = []

    def chunk() -> None:
        turns.wait_turn()
        ended.append(time.monotonic())

    turns.wait_turn()  # no window: at once
    with turns.window():
        reader = threading.Thread(target=chunk)
        reader.start()
        time.sleep(0.1)
        closed = time.monotonic()
    reader.join()
    assert closed <= ended[0] < closed + 5.0  # when the window ended, not after its share
    turns, opened = WindowTurns(share_s=1.0), time.monotonic()
    with turns.window():
        reader = threading.Thread(target=chunk)
        reader.start()
        reader.join(5)  # a window longer than its share
    assert opened + 1.0 <= ended[1] < opened + 4.5  # its share, not the window's 5 s
