"""`hdfs-events-agent sync` out of an HDFS encryption zone, on a real KMS: Hadoop's own KMS
(MiniKMS, tests/kit/hadoop/kms.py) holds the zone's key, the kit's NameNode and the sync's client
reach it over HTTP, and the files in the zone (small, multipart, empty, written before the sync
started and while it runs) land in S3 as their plaintext, byte for byte, SSE-KMS under the
destination's key, with 0 parked. The DataNodes hold ciphertext, so HDFS's checksum of a file in
the zone differs from the CRC32C of its plaintext: the test asserts it, or it could pass without
the zone handling (onprem_agent/sync/encryption.py) ever running."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import boto3
import crc32c
import pytest

from onprem_agent.live.hadoop import HadoopClient, hadoop_configuration
from onprem_agent.sync.hdfs_files import CHECKSUM_CONF, HdfsFiles
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.kms import KeyServer
from tests.kit.sync_agent import (
    create_sync_table,
    start_sync,
    sync_command,
    sync_totals,
    wait_for_replication,
    write_sync_config,
)

CLUSTER = "prod"
BUCKET = "replica"
ZONE_KEY = "replica-zone"
CRYPTO_ADMIN = "org.apache.hadoop.hdfs.tools.CryptoAdmin"  # `hdfs crypto`


@pytest.fixture(scope="module")
def kms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyServer]:
    with KeyServer.start(tmp_path_factory.mktemp("kms"), wait=False) as server:
        yield server


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory, kms: KeyServer) -> Iterator[HdfsCluster]:
    """The kit's NameNode with the KMS as its key provider and /ez an encryption zone under a
    key created in the KMS (the two JVMs start side by side)."""
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs"), conf=kms.provider_conf()) as cluster:
        kms.wait_ready()
        kms.create_key(ZONE_KEY)
        superuser = cluster.run([["status", "/"]])[0]["owner"]
        cluster.run([["mkdirs", "/ez"], ["mkdirs", "/plain"],
                     ["shell", superuser, ["-createZone", "-keyName", ZONE_KEY, "-path", "/ez"],
                      CRYPTO_ADMIN]])
        yield cluster


def text(name: str, size: int) -> str:
    line = f"{name}:" + "".join(chr(48 + (i * 7 + len(name)) % 75) for i in range(97)) + "\n"
    return (line * (size // len(line) + 1))[:size]


def marker(hdfs: HdfsCluster, name: str) -> int:
    """An event outside the sync's paths; its txid is what the sync must reach."""
    hdfs.run([["mkdirs", f"/markers/{name}"]])
    return hdfs.txid()


def b64_crc32c(data: bytes) -> str:
    return base64.b64encode(crc32c.crc32c(data).to_bytes(4, "big")).decode()


def test_files_in_an_encryption_zone_on_a_real_kms_are_copied_verified_and_none_parked(
        zoned, kms, moto_endpoint, jvm, tmp_path):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET,
                     CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    create_sync_table()
    key_arn = boto3.client("kms").create_key(Description="the replica's key")["KeyMetadata"][
        "Arn"]
    files = {"/ez/small": text("s", 70_000), "/ez/big": text("b", 6 * 1024 * 1024),
             "/ez/empty": "", "/plain/c": text("c", 3000)}
    superuser = zoned.run([["status", "/"]])[0]["owner"]
    zones = zoned.run([["shell", superuser, ["-listZones"], CRYPTO_ADMIN]])[0]
    assert "/ez" in zones and ZONE_KEY in zones, zones
    zoned.run([["write", path, data] for path, data in files.items()])

    # What the sync's own client sees: the zone's files flagged, their HDFS checksums not the
    # CRC32C of their plaintext (the DataNodes store ciphertext), the file outside equal to it.
    client = HadoopClient(zoned.uri, hadoop_configuration(CHECKSUM_CONF))
    try:
        hdfs = HdfsFiles(client.file_system())
        for path, data in files.items():
            in_zone = path.startswith("/ez/")
            assert hdfs.status(path).encrypted is in_zone, path
            if data:
                matches = hdfs.checksum(path).value == crc32c.crc32c(data.encode())
                assert matches is not in_zone, path
    finally:
        client.close()

    dest = f"s3://{BUCKET}/mirror/"
    config = write_sync_config(
        tmp_path / "sync", cluster=CLUSTER, uri=zoned.uri, conf_dir=zoned.conf_dir,
        destination=dest, paths=["/ez", "/plain"],
        sync_extra=f'part_size_mb = 5\nmultipart_threshold_mb = 5\nwindow_ms = 200\n'
                   f'kms_key_id = "{key_arn}"\n')
    sync = start_sync(config)
    try:
        wait_for_replication(sync, CLUSTER, dest, marker(zoned, "listed"))
        # Live: a new file in the zone, and a chmod (its object's metadata, re-verified).
        files["/ez/live"] = text("l", 200_000)
        zoned.run([["write", "/ez/live", files["/ez/live"]], ["chmod", "/ez/small", "0600"]])
        wait_for_replication(sync, CLUSTER, dest, marker(zoned, "live"))
    finally:
        assert sync.stop() == 0, sync.log_tail()

    for path, data in files.items():
        key = "mirror" + path
        got = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
        assert got["Body"].read() == data.encode(), path
        assert got["ChecksumCRC32C"].split("-")[0] == b64_crc32c(data.encode()), path
        assert got.get("ChecksumType") != "COMPOSITE", path
        assert (got["ServerSideEncryption"], got["SSEKMSKeyId"]) == ("aws:kms", key_arn), path
    assert s3.head_object(Bucket=BUCKET, Key="mirror/ez/small")["Metadata"][
        "hdfs-permission"] == "0600"
    totals = sync_totals(CLUSTER, dest)
    assert totals["uploads"] >= len(files), totals
    status = sync_command(config, "status")
    assert "parked paths: 0" in status.stdout, status.stdout + sync.log_tail()
    verify = sync_command(config, "verify", "--prefix", "/ez", "--prefix", "/plain")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert ("/ez: 4 files in HDFS, 0 checksums compared, 0 differ (4 in encryption zones: size "
            "and mtime compared)") in verify.stdout, verify.stdout
    assert "/plain: 1 files in HDFS, 1 checksums compared, 0 differ\n" in verify.stdout
    assert "ChecksumMismatch" not in sync.log.read_text(errors="replace")
