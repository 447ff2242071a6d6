"""The NameNode's latest checkpoint into the lake: `hdfs dfsadmin -fetchImage` in the agent's own
JVM, then one multipart upload to `fsimage/cluster=<c>/txid=<t>/fsimage_<t>` (lake_layout.fsimage_key)
and the fetch marker beside it, written last (docs/fsimage.md, "The agent's fetch").

Hadoop does the fetch: DFSAdmin.fetchImage asks the active NameNode's HTTP server for
`/imagetransfer?getimage=1&txid=latest` (HA-aware through the client's failover proxy, SPNEGO
when Kerberos is on), checks the MD5 the NameNode sends, and names the file
`fsimage_<19-digit txid>`. No listing RPC is made; resolving the active NameNode costs one
getFileInfo of "/".

    [fsimage]
    bucket = "hdfs-events-prod-lake-..."   # required: the lake bucket (CDK output LakeBucket)
    download_dir = "/var/tmp"              # where the image lands before upload (else $TMPDIR)
    part_size_mb = 64                      # S3: 5 MiB..5 GiB, at most 10,000 parts
    inventory_job = ""                     # first_start = "fsimage": the Glue job to run
    index_wait_s = 7200                    #   and how long to wait for its index

Images are gigabytes: the file is streamed from disk in 1 MiB chunks, never held whole, and its
temporary directory is removed whatever happens.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hdfs_events.lake_layout import fsimage_key, fsimage_marker_key
from onprem_agent.agent_toml import Key, Section, Values
from onprem_agent.sync.hdfs_files import JavaCrc
from onprem_agent.sync.replica import check_stored, crc_b64, crc_int, upload_parts

MIB = 1024 * 1024
# S3's multipart limits: parts of 5 MiB at least (but the last), 5 GiB at most, 10,000 parts.
_MIN_PART_MB, _MAX_PART_MB, _MAX_PARTS = 5, 5 * 1024, 10_000
_CHUNK = MIB
# TransferFsImage names the file for the image's last transaction, 19 digits (NNStorage).
IMAGE_NAME = re.compile(r"fsimage_(\d{19})")
_DFSADMIN = "org.apache.hadoop.hdfs.tools.DFSAdmin"


class ImageFetchError(RuntimeError):
    """The image could not be fetched or uploaded; the message says what to do."""


@dataclass(frozen=True, slots=True)
class FsImageSettings:
    bucket: str
    download_dir: Path | None = None
    part_size: int = 64 * MIB
    inventory_job: str = ""  # CDK output InventoryJobName
    index_wait_s: int = 7200


def _download_dir(v: Values) -> Path | None:
    directory = v.path("download_dir")
    if directory is not None and not directory.is_dir():
        raise v.error("download_dir", f"{directory} is not a directory")
    return directory


FSIMAGE = Section("fsimage", {
    "bucket": Key(str, required="the lake bucket: CDK output LakeBucket"),
    "download_dir": Key(str),  # relative: to the config file; default: $TMPDIR
    "part_size_mb": Key(int, 64, low=_MIN_PART_MB, high=_MAX_PART_MB),
    "inventory_job": Key(str, ""),
    "index_wait_s": Key(int, 7200, low=10, high=7 * 86_400),
}, build=lambda v: FsImageSettings(
    bucket=v["bucket"], download_dir=_download_dir(v), part_size=v["part_size_mb"] * MIB,
    inventory_job=v["inventory_job"], index_wait_s=v["index_wait_s"]),
    absent="required for `fetch-image` (bucket at least)")


@dataclass(frozen=True, slots=True)
class FetchedImage:
    txid: int
    size: int
    crc32c: int
    bucket: str
    key: str
    uploaded: bool  # False: the lake already held these bytes under this key
    seconds: float

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def line(self) -> str:
        what = "uploaded" if self.uploaded else "already in the lake, nothing uploaded"
        return (f"fsimage txid {self.txid}: {self.size:,} bytes in {self.seconds:.1f} s, "
                f"{what}: {self.uri}")


def fetch_latest_image(conf: Any, directory: Path) -> tuple[Path, str]:
    """DFSAdmin.fetchImage into `directory` (what `hdfs dfsadmin -fetchImage <dir>` runs):
    (the image file, the NameNode HTTP server it came from). `conf` names the cluster in
    fs.defaultFS, as DFSAdmin reads it."""
    import jpype

    try:
        admin_class = jpype.JClass(_DFSADMIN)
    except TypeError:  # JPype: no such class on the classpath
        raise ImageFetchError(
            f"{_DFSADMIN} is not on the agent's classpath: `fetch-image` needs the hadoop-hdfs "
            "jar, as `hdfs dfsadmin` does -> run where `hadoop classpath` works, or add "
            "hadoop-hdfs (or hadoop-client-minicluster) to [hdfs] classpath") from None
    admin = admin_class(conf)
    try:
        namenode = _info_server(conf)
        admin.fetchImage(jpype.JArray(jpype.JString)([str(directory)]), 0)
    except Exception as exc:  # JPype raises the Java IOException
        from onprem_agent.live.hadoop import java_error_line

        line = java_error_line(exc)
        raise ImageFetchError(f"fetching the image from {conf.get('fs.defaultFS')} failed: "
                              f"{line} -> {_fetch_hint(line)}") from None
    images = [p for p in directory.iterdir() if IMAGE_NAME.fullmatch(p.name)]
    if len(images) != 1:
        raise ImageFetchError(f"DFSAdmin.fetchImage left {sorted(p.name for p in directory.iterdir())}"
                              f" in {directory}, not one fsimage_<txid>")
    return images[0], namenode


def _fetch_hint(line: str) -> str:
    if "status code 403" in line:
        # ImageServlet.isValidRequestor: the NameNodes' own principals and HttpServer2's
        # admin ACL, nobody else.
        return ("the NameNode's image servlet serves only its administrators: add the agent's "
                "user to dfs.cluster.administrators on the NameNodes")
    if "ConnectException" in line or "UnknownHost" in line:
        return ("the NameNode's HTTP server is not reachable: check dfs.namenode.http-address "
                "(https-address with dfs.http.policy HTTPS_ONLY) in the agent's hdfs-site.xml")
    return "run `hdfs dfsadmin -fetchImage /tmp` as the agent's user to see Hadoop's own account"


def _info_server(conf: Any) -> str:
    """The HTTP address DFSAdmin.fetchImage asks, found as it finds it: the active NameNode's
    RPC address (HAUtil: one getFileInfo of "/"), then its info server."""
    import jpype

    fs = jpype.JClass("org.apache.hadoop.fs.FileSystem").get(conf)
    address = jpype.JClass("org.apache.hadoop.hdfs.HAUtil").getAddressOfActive(fs)
    util = jpype.JClass("org.apache.hadoop.hdfs.DFSUtil")
    return str(util.getInfoServer(address, conf, util.getHttpClientScheme(conf)))


def image_txid(image: Path) -> int:
    m = IMAGE_NAME.fullmatch(image.name)
    if m is None:
        raise ImageFetchError(f"{image.name} is not named fsimage_<19-digit txid>")
    return int(m[1])


def file_chunks(path: Path, chunk: int = _CHUNK) -> Iterator[tuple[Any, int]]:
    """(Java byte[] buffer, bytes filled) chunks of a local file, the buffer reused: the shape
    upload_parts and JavaCrc take (java.util.zip.CRC32C is hardware-accelerated)."""
    import jpype

    stream = jpype.JClass("java.io.FileInputStream")(str(path))
    buf = jpype.JArray(jpype.JByte)(chunk)
    try:
        while (n := int(stream.read(buf))) >= 0:
            if n:
                yield buf, n
    finally:
        stream.close()


def file_crc32c(path: Path) -> int:
    crc = JavaCrc("CRC32C")
    for buf, n in file_chunks(path):
        crc.update(buf, 0, n)
    return crc.value


class LakeImages:
    """The lake's copy of a cluster's images: one object per image and the marker beside it."""

    def __init__(self, s3: Any, bucket: str, cluster: str, part_size: int) -> None:
        self.s3, self.bucket, self.cluster, self.part_size = s3, bucket, cluster, part_size
        self.requests = 0

    def _count(self) -> None:
        self.requests += 1

    def listed(self, txid: int) -> dict[str, int]:
        """Size by key of the objects under the image's txid prefix. A listing, not a HEAD of
        the image: without s3:ListBucket on the key S3 answers a HEAD of a missing object with
        403, and the principal may list only its own cluster's prefix (s3:prefix condition)."""
        prefix = fsimage_key(self.cluster, txid).rsplit("/", 1)[0] + "/"
        self._count()
        r = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return {o["Key"]: int(o["Size"]) for o in r.get("Contents", [])}

    def stored_crc32c(self, key: str) -> int | None:
        """The full-object CRC32C S3 holds for the object at key (None: stored without one)."""
        self._count()
        crc = self.s3.head_object(Bucket=self.bucket, Key=key,
                                  ChecksumMode="ENABLED").get("ChecksumCRC32C")
        return crc_int(crc.split("-")[0]) if crc else None

    def marker(self, txid: int) -> dict[str, Any]:
        self._count()
        body = self.s3.get_object(Bucket=self.bucket,
                                  Key=fsimage_marker_key(self.cluster, txid))["Body"].read()
        return json.loads(body)

    def upload(self, image: Path, key: str) -> int:
        """The file into one object by a multipart upload (every part and the whole object
        checked by S3 against their CRC32C); returns the CRC32C."""
        size = image.stat().st_size
        part_size = max(self.part_size, -(-size // _MAX_PARTS))
        whole = JavaCrc("CRC32C")

        def chunks() -> Iterator[tuple[Any, int]]:
            for buf, n in file_chunks(image):
                whole.update(buf, 0, n)
                yield buf, n

        self._count()
        upload_id = self.s3.create_multipart_upload(
            Bucket=self.bucket, Key=key, ChecksumAlgorithm="CRC32C",
            ChecksumType="FULL_OBJECT")["UploadId"]
        try:
            parts = upload_parts(self.s3, self.bucket, key, upload_id, chunks(), part_size,
                                 count=self._count)
            if sum(n for _, n in parts) != size:
                raise ImageFetchError(f"{image} changed while it was uploaded")
            self._count()
            done = self.s3.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id,
                ChecksumCRC32C=crc_b64(whole.value), ChecksumType="FULL_OBJECT",
                MultipartUpload={"Parts": [p for p, _ in parts]})
        except BaseException:
            self._count()
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise
        check_stored(self.s3, self.bucket, key, done, whole.value, count=self._count)
        return whole.value

    def put_marker(self, txid: int, marker: dict[str, Any]) -> None:
        body = json.dumps(marker, sort_keys=True).encode()
        self._count()
        self.s3.put_object(Bucket=self.bucket, Key=fsimage_marker_key(self.cluster, txid),
                           Body=body, ContentType="application/json")


def ship_image(image: Path, lake: LakeImages, *, namenode: str,
               clock: Any = time.time) -> tuple[int, int, bool]:
    """The local image into the lake unless it is there already (same key, same CRC32C, and its
    marker): (txid, CRC32C, uploaded). The marker is written last, and again when an earlier
    run stopped between the image and its marker."""
    txid, size = image_txid(image), image.stat().st_size
    key = fsimage_key(lake.cluster, txid)
    listed = lake.listed(txid)
    crc = None
    if listed.get(key) == size:
        crc = file_crc32c(image)
        if lake.stored_crc32c(key) != crc:
            crc = None
    if crc is not None:
        uploaded = False
        if fsimage_marker_key(lake.cluster, txid) in listed:
            marker = lake.marker(txid)
            if (marker.get("crc32c"), marker.get("size")) == (f"{crc:08x}", size):
                return txid, crc, False
    else:
        crc = lake.upload(image, key)
        uploaded = True
    lake.put_marker(txid, {
        "cluster": lake.cluster, "txid": txid, "key": key, "size": size, "crc32c": f"{crc:08x}",
        "fetched_at": datetime.fromtimestamp(clock(), UTC).isoformat(timespec="seconds"),
        "namenode": namenode})
    return txid, crc, uploaded


def fetch_image(conf: Any, lake: LakeImages, download_dir: Path | None = None,
                clock: Any = time.monotonic) -> FetchedImage:
    """The NameNode's latest image into the lake, through a temporary directory removed after."""
    started = clock()
    with tempfile.TemporaryDirectory(prefix="hdfs-events-fsimage-", dir=download_dir) as tmp:
        image, namenode = fetch_latest_image(conf, Path(tmp))
        size = image.stat().st_size
        txid, crc, uploaded = ship_image(image, lake, namenode=namenode)
    return FetchedImage(txid=txid, size=size, crc32c=crc, bucket=lake.bucket,
                        key=fsimage_key(lake.cluster, txid), uploaded=uploaded,
                        seconds=clock() - started)
