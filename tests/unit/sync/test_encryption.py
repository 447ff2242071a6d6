"""The sync's rules for encryption (onprem_agent/sync/encryption.py) on their own: a file in an
HDFS encryption zone, whose HDFS checksum covers ciphertext, is verified by the CRC32C of the
plaintext read and a read-back of the object, and is not accepted when it changed while read;
the same file outside a zone fails as it always did; objects land SSE-KMS under the [sync] key.
S3 is moto in-process, the CRCs the agent's own Java ones; the real zone, on a real KMS, is
tests/integration/hdfs/test_sync_encryption.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import crc32c
import pytest

from hdfs_events.event import INodeType
from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import parse_config
from onprem_agent.live.snapshot import NamespaceEntry
from onprem_agent.sync.encryption import in_zone, read_problem
from onprem_agent.sync.hdfs_files import FileChecksum
from onprem_agent.sync.replica import ChecksumMismatch, S3Replica, Throttle, crc_b64
from onprem_agent.sync.settings import SYNC, SyncSettings

KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SETTINGS = SyncSettings(bucket="replica", prefix="m/", table="sync", paths=("/z",),
                        ignore_patterns=(), multipart_threshold=5 * 1024 * 1024,
                        part_size=5 * 1024 * 1024)


def ciphertext(data: bytes) -> bytes:
    """Stands for what the DataNodes of a zone store: other bytes of the same length."""
    return bytes(b ^ 0x5A for b in data)


class ZoneFilesDouble:
    """A file in an encryption zone as HdfsFiles shows it: plaintext to read, the ciphertext's
    COMPOSITE-CRC32C as its checksum; `rewrites` replace the stored bytes once the read ends."""

    def __init__(self, jvm, path: str, data: bytes) -> None:
        self.jvm, self.path, self.stored = jvm, path, ciphertext(data)
        self.data, self.rewrites = data, []

    def checksum(self, path):
        return FileChecksum("COMPOSITE-CRC32C", crc32c.crc32c(self.stored))

    def read(self, path, chunk=1024 * 1024, *, start=0):
        for i in range(start, len(self.data), chunk):
            part = self.data[i:i + chunk]
            yield self.jvm.JArray(self.jvm.JByte)(part), len(part)
        for new in self.rewrites:  # an overwrite of the same length, while the sync read
            self.stored = ciphertext(new)


def entry(path: str, size: int, *, encrypted: bool) -> NamespaceEntry:
    return NamespaceEntry(path, INodeType.FILE, size=size, mtime=7, owner="etl",
                          group="hadoop", perms="0640", replication=3, encrypted=encrypted)



@pytest.mark.parametrize("size", [70_000, 11 * 1024 * 1024], ids=["put", "multipart"])
def test_a_file_in_a_zone_is_verified_by_its_plaintext_crc_and_a_read_back(jvm, s3, size):
    data = (b"plaintext of an encrypted file\n" * (size // 31 + 1))[:size]
    hdfs = ZoneFilesDouble(jvm, "/z/f", data)
    checksum = hdfs.checksum("/z/f")
    assert checksum.value != crc32c.crc32c(data)  # else the test could not tell
    replica = S3Replica(SETTINGS)
    replica.upload("/z/f", entry("/z/f", size, encrypted=True), hdfs, checksum, Throttle(0))
    got = s3.get_object(Bucket="replica", Key="m/z/f", ChecksumMode="ENABLED")
    assert got["Body"].read() == data
    assert got["ChecksumCRC32C"].split("-")[0] == crc_b64(crc32c.crc32c(data))
    assert replica.counters.uploads == 1


def test_the_same_file_outside_a_zone_fails_verification(jvm, s3):
    """What every file in a zone met before: HDFS's checksum of ciphertext against the CRC32C of
    the plaintext read."""
    data = b"x" * 70_000
    hdfs = ZoneFilesDouble(jvm, "/z/f", data)
    with pytest.raises(ChecksumMismatch, match="changed while read"):
        S3Replica(SETTINGS).upload("/z/f", entry("/z/f", len(data), encrypted=False), hdfs,
                                   hdfs.checksum("/z/f"), Throttle(0))
    assert "Contents" not in s3.list_objects_v2(Bucket="replica")


@pytest.mark.parametrize("size", [70_000, 11 * 1024 * 1024], ids=["put", "multipart"])
def test_a_file_in_a_zone_that_changed_while_read_is_not_accepted(jvm, s3, size):
    hdfs = ZoneFilesDouble(jvm, "/z/f", b"a" * size)
    hdfs.rewrites.append(b"b" * size)
    with pytest.raises(ChecksumMismatch, match="ciphertext checksum changed while"):
        S3Replica(SETTINGS).upload("/z/f", entry("/z/f", size, encrypted=True), hdfs,
                                   hdfs.checksum("/z/f"), Throttle(0))
    assert "Contents" not in s3.list_objects_v2(Bucket="replica")
    assert not s3.list_multipart_uploads(Bucket="replica").get("Uploads")


def test_a_short_read_in_a_zone_names_both_lengths():
    e = entry("/z/f", 10, encrypted=True)
    same = FileChecksum("COMPOSITE-CRC32C", 1)
    assert read_problem("/z/f", e, 10, same, same) is None
    assert "read 9 bytes of plaintext; HDFS reports 10" in read_problem("/z/f", e, 9, same, same)
    assert in_zone(e) and not in_zone(dataclasses.replace(e, encrypted=None))


@pytest.mark.parametrize("size", [70_000, 11 * 1024 * 1024], ids=["put", "multipart"])
def test_objects_land_sse_kms_under_the_configured_key(jvm, s3, size):
    data = b"k" * size
    hdfs = ZoneFilesDouble(jvm, "/z/f", data)
    replica = S3Replica(dataclasses.replace(SETTINGS, kms_key_id=KEY_ARN))
    replica.upload("/z/f", entry("/z/f", size, encrypted=True), hdfs, hdfs.checksum("/z/f"),
                   Throttle(0))
    e = entry("/z/g", size, encrypted=True)
    assert replica.server_copy("/z/f", "/z/g", dataclasses.replace(e, mtime=7))
    for key in ("m/z/f", "m/z/g"):
        head = s3.head_object(Bucket="replica", Key=key)
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", KEY_ARN), key


@pytest.mark.parametrize("value", ["alias/replica", "1234abcd-12ab-34cd-56ef-1234567890ab",
                                   "arn:aws:kms:eu-west-1:123456789012:alias/replica"])
def test_kms_key_id_must_be_a_key_arn(value):
    base = {"cluster": "prod", "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
            "checkpoint": {"store": "dynamodb", "table": "state"},
            "sync": {"destination": "s3://r/p", "table": "t", "kms_key_id": value}}
    with pytest.raises(ConfigError, match=r"^agent\.toml: \[sync\] kms_key_id: must be a KMS "
                                          r"key ARN"):
        parse_config(base, Path("/etc/agent.toml")).read(SYNC)
    base["sync"]["kms_key_id"] = KEY_ARN
    assert parse_config(base, Path("agent.toml")).read(SYNC).kms_key_id == KEY_ARN
