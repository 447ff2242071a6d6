"""`hdfs-events-agent fetch-image` against a real NameNode: the image the NameNode saved, fetched
over its HTTP server by Hadoop's DFSAdmin in the agent's own JVM, lands byte for byte in the
lake bucket on the moto server under its txid, with the fetch marker; a rerun uploads nothing;
a newer checkpoint makes a new object. What a rerun finds (other bytes under the key, an image
without its marker) and the [fsimage] section's errors are checked without a NameNode.

The agent runs as an edge node runs it (its own process); its classpath is the kit's jars, whose
minicluster jar holds DFSAdmin (pyspark's client jars do not: an edge node has hadoop-hdfs).
Refusal of another cluster's prefix to the deployed principal: tests/integration/iam/
test_agent_as_deployed.py.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from hdfs_events import lake_layout
from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import load_config
from onprem_agent.image_fetch import FSIMAGE, LakeImages, ship_image
from onprem_agent.sync.replica import crc_int
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.jars import LIB
from tests.kit.live_agent import AGENT

CLUSTER, BUCKET = "prod", "lake"
FILES = 300


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs")) as cluster:
        cluster.run([["mkdirs", f"/data/d{d}"] for d in range(10)]
                    # Mostly empty files: no block, no DataNode pipeline (a NameNode op each).
                    + [["write", f"/data/d{i % 10}/f{i:04d}.csv", "" if i % 30 else f"{i}\n"]
                       for i in range(FILES)])
        cluster.checkpoint()
        yield cluster


def newest_image(hdfs: HdfsCluster) -> Path:
    """The NameNode's own newest image: fsimage_<19-digit txid> in its name directory."""
    images = sorted((hdfs.base_dir / "dfs").glob("name*/current/fsimage_" + "[0-9]" * 19))
    assert images, f"no fsimage under {hdfs.base_dir / 'dfs'}"
    return images[-1]


@pytest.fixture
def lake(moto_endpoint: str) -> str:
    boto3.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    return BUCKET


def config(directory: Path, hdfs: HdfsCluster, download_dir: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    download_dir.mkdir(exist_ok=True)
    path = directory / "agent.toml"
    path.write_text(f'''cluster = "{CLUSTER}"
[sqs]
queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unused.fifo"
[checkpoint]
path = "{directory / 'checkpoint.json'}"
[hdfs]
uri = "{hdfs.uri}"
conf_dir = "{hdfs.conf_dir}"
classpath = ["{LIB}/*"]
[fsimage]
bucket = "{BUCKET}"
download_dir = "{download_dir}"
part_size_mb = 5
''', encoding="utf-8")
    return path


def fetch_image(config_path: Path) -> str:
    done = subprocess.run([str(AGENT), "fetch-image", "--config", str(config_path)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_the_newest_image_lands_in_the_lake_once(hdfs: HdfsCluster, lake: str,
                                                  tmp_path: Path) -> None:
    image = newest_image(hdfs)
    txid = int(image.name.removeprefix("fsimage_"))
    downloads = tmp_path / "downloads"
    agent_toml = config(tmp_path, hdfs, downloads)
    s3 = boto3.client("s3")

    line = fetch_image(agent_toml)

    key = lake_layout.fsimage_key(CLUSTER, txid)
    assert key == f"fsimage/cluster={CLUSTER}/txid={txid}/{image.name}"
    assert line.startswith(f"fsimage txid {txid}: {image.stat().st_size:,} bytes in ")
    assert line.endswith(f"uploaded: s3://{lake}/{key}"), line
    stored = s3.get_object(Bucket=lake, Key=key, ChecksumMode="ENABLED")
    assert stored["Body"].read() == image.read_bytes()
    marker_key = lake_layout.fsimage_marker_key(CLUSTER, txid)
    marker = json.loads(s3.get_object(Bucket=lake, Key=marker_key)["Body"].read())
    assert (marker["txid"], marker["size"], marker["key"]) == (txid, image.stat().st_size, key)
    assert int(marker["crc32c"], 16) == crc_int(stored["ChecksumCRC32C"])
    assert marker["namenode"].startswith("http://")
    assert list(downloads.iterdir()) == [], "the local copy is removed"
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=lake)["Contents"]) == sorted(
        [key, marker_key])

    before = {k: s3.head_object(Bucket=lake, Key=k)["LastModified"] for k in (key, marker_key)}
    again = fetch_image(agent_toml)

    assert again.endswith(f"already in the lake, nothing uploaded: s3://{lake}/{key}"), again
    assert {k: s3.head_object(Bucket=lake, Key=k)["LastModified"]
            for k in (key, marker_key)} == before
    assert json.loads(s3.get_object(Bucket=lake, Key=marker_key)["Body"].read()) == marker
    assert list(downloads.iterdir()) == []


def test_a_newer_checkpoint_is_a_new_object(hdfs: HdfsCluster, lake: str,
                                            tmp_path: Path) -> None:
    first = int(newest_image(hdfs).name.removeprefix("fsimage_"))
    hdfs.run([["write", f"/data/later/f{i}.csv", "x"] for i in range(20)])
    hdfs.checkpoint()
    image = newest_image(hdfs)
    txid = int(image.name.removeprefix("fsimage_"))
    assert txid > first

    line = fetch_image(config(tmp_path, hdfs, tmp_path / "downloads"))

    assert f"fsimage txid {txid}:" in line
    body = boto3.client("s3").get_object(Bucket=lake, Key=lake_layout.fsimage_key(CLUSTER, txid))
    assert body["Body"].read() == image.read_bytes()


# -- what a rerun finds in the lake, with the agent's JVM in this process (CRC32C in Java) -------

def lake_images(s3: object) -> LakeImages:
    return LakeImages(s3, BUCKET, CLUSTER, part_size=5 * 1024 * 1024)


def test_other_bytes_under_the_key_are_replaced_and_a_missing_marker_is_written(
        jvm: object, lake: str, tmp_path: Path) -> None:
    image = tmp_path / f"fsimage_{42:019d}"
    image.write_bytes(b"HDFSIMG1" + bytes(range(256)) * 64)
    s3 = boto3.client("s3")
    key, marker_key = lake_layout.fsimage_key(CLUSTER, 42), lake_layout.fsimage_marker_key(CLUSTER, 42)
    # A killed run's leftover of the same size but other bytes, with no marker.
    s3.put_object(Bucket=lake, Key=key, Body=b"X" * image.stat().st_size)

    assert ship_image(image, lake_images(s3), namenode="http://nn:9870")[2] is True
    assert s3.get_object(Bucket=lake, Key=key)["Body"].read() == image.read_bytes()
    s3.delete_object(Bucket=lake, Key=marker_key)  # killed after the image, before the marker

    txid, crc, uploaded = ship_image(image, lake_images(s3), namenode="http://nn:9870")

    assert (txid, uploaded) == (42, False)
    marker = json.loads(s3.get_object(Bucket=lake, Key=marker_key)["Body"].read())
    assert marker["crc32c"] == f"{crc:08x}" and marker["size"] == image.stat().st_size


def test_a_bad_fsimage_section_is_named_with_its_rule(tmp_path: Path) -> None:
    def settings(text: str) -> object:
        path = tmp_path / "agent.toml"
        path.write_text(f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = "https://q/x.fifo"\n'
                        f'[checkpoint]\npath = "c.json"\n{text}', encoding="utf-8")
        return load_config(path).read(FSIMAGE)

    for text, message in (
            ("", "agent.toml: [fsimage]: required for `fetch-image` (bucket at least)"),
            ('[fsimage]\npart_size_mb = 8\n', "[fsimage] bucket: required (the lake bucket"),
            ('[fsimage]\nbucket = "b"\npart_size_mb = 4\n', "[fsimage] part_size_mb: must be >= 5"),
            ('[fsimage]\nbucket = "b"\ndownload_dir = "nowhere"\n',
             f"[fsimage] download_dir: {tmp_path / 'nowhere'} is not a directory"),
            ('[fsimage]\nbucket = "b"\nprefix = "x/"\n', "[fsimage] prefix: unknown key")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            settings(text)
    assert settings('[fsimage]\nbucket = "b"\n').part_size == 64 * 1024 * 1024
