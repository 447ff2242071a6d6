"""The S3 side of the sync: one object per replicated HDFS file under `s3://bucket/prefix/`, the
key being the HDFS path without its leading "/", the file's attributes as object metadata.

Every upload is verified end to end before it counts (docs/sync.md, "Verified copies"; a file
in an HDFS encryption zone, whose checksum covers ciphertext, as onprem_agent.sync.encryption
says):
1. HDFS's own checksum first (COMPOSITE-CRC32C, onprem_agent.sync.hdfs_files);
2. the bytes read are CRC32C'd as they stream (in Java) and must equal it, and their count
   must equal the file's length: a file changed under the reader is not uploaded;
3. S3 is told the CRC32C of every part and of the whole object (ChecksumType FULL_OBJECT; one
   PutObject with ChecksumCRC32C below the multipart threshold), checks the bytes it got
   against them, and returns its own full-object CRC32C, which must equal (1) as well.
A mismatch at (2) aborts the multipart upload; at (3) the object is deleted. Either way the
step fails with ChecksumMismatch and is retried, then parked: never accepted.

An append (plan.py marks them; onprem_agent.sync.appends) copies the object's bytes inside S3
and uploads the file's bytes after them, when the object's CRC32C combined with theirs equals
(1); the whole object is then verified at (3) as any other.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from onprem_agent.live.snapshot import NamespaceEntry
from onprem_agent.sync.appends import MAX_PARTS, MIN_PART, crc32c_combine, prefix_ranges
from onprem_agent.sync.encryption import in_zone, read_problem, sse_arguments
from onprem_agent.sync.hdfs_files import FileChecksum, HdfsFiles, JavaCrc
from onprem_agent.sync.parts import BufferBudget, crc_b64, upload_parts
from onprem_agent.sync.plan import FileState, under
from onprem_agent.sync.settings import SyncSettings

log = logging.getLogger(__name__)

# S3 CopyObject copies at most 5 GiB in one request; a bigger object is copied server-side by a
# multipart upload of UploadPartCopy parts (each 5 MiB..5 GiB, at most 10,000 of them).
COPY_OBJECT_LIMIT = 5 * 1024**3
# Parts of a server-side multipart copy: no byte crosses the WAN, so big parts (few requests,
# the bill) cost nothing; still 5 MiB at least and few enough for S3's 10,000.
COPY_PART_SIZE = 512 * 1024**2
# botocore's standard mode retries one request (one part, not the file) on S3's 503 SlowDown,
# other throttles and 5xx, with jittered exponential backoff up to 20 s. Its default of 3
# attempts gives up within seconds, while S3 asks a prefix that scales up to slow down for
# minutes; a failed part then fails the file's step (retried whole, replicator.py).
S3_RETRIES = {"mode": "standard", "max_attempts": 10}
# Parts of one file uploaded at once: enough to keep a connection busy while the next part is
# read from HDFS and to let one large file use the bandwidth several workers would (measured
# in bench.sync, docs/sync.md "Measured"); the buffer budget may allow fewer.
PARTS_IN_FLIGHT = 4
_META = {"owner": "hdfs-owner", "group": "hdfs-group", "permissions": "hdfs-permission",
         "replication": "hdfs-replication"}
# Always written: the sync compares size and mtime to know an object is current.
_MTIME = "hdfs-mtime"


class ChecksumMismatch(Exception):
    """The bytes S3 holds (or would hold) are not the HDFS file's."""


@dataclass(frozen=True, slots=True)
class ObjectState:
    file: FileState
    crc32c: int | None  # S3's full-object CRC32C, when it has one
    checksum_type: str | None


@dataclass(slots=True)
class Counters:
    uploads: int = 0  # objects written from HDFS bytes
    bytes: int = 0
    server_copies: int = 0
    metadata_updates: int = 0
    deletes: int = 0
    requests: int = 0  # every S3 call, for the bill per replicated file
    appends: int = 0  # uploads that sent only the bytes after the object's (also in uploads)
    retries: int = 0  # S3 requests botocore sent again (SlowDown, other throttles, 5xx)

    def add(self, other: Counters) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Throttle:
    """A byte budget per second shared by all workers (bandwidth_mb_s); 0 = no limit."""

    def __init__(self, bytes_per_s: int, clock: Any = time.monotonic, sleep: Any = time.sleep):
        self._rate, self._clock, self._sleep = bytes_per_s, clock, sleep
        self._lock = threading.Lock()
        self._next = clock()

    def take(self, n: int) -> None:
        if not self._rate:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + n / self._rate
        if start > now:
            self._sleep(start - now)


class Yielding(Throttle):
    """A long copy's throttle (replicator.py, "Bulk copies"): before each chunk it waits for its
    turn, then takes from the budget all workers share."""

    def __init__(self, shared: Throttle, wait_turn: Callable[[], None]) -> None:
        self._shared, self._wait_turn = shared, wait_turn

    def take(self, n: int) -> None:
        self._wait_turn()
        self._shared.take(n)


def crc_int(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big")


def check_stored(s3: Any, bucket: str, key: str, response: dict[str, Any], crc: int,
                 count: Callable[[], None] = lambda: None) -> None:
    """The full-object CRC32C S3 stored for `key` must be `crc`; else the object is deleted and
    ChecksumMismatch raised. `response` is the write's own (PutObject, CopyObject's result or
    CompleteMultipartUpload)."""
    if response.get("ChecksumCRC32C") is None:
        # S3 returns the checksum it stored in the response (and refuses a completion whose
        # FULL_OBJECT checksum is not the parts'), so S3 never gets this HEAD; a store that
        # leaves it out (moto 5.2's CompleteMultipartUpload) is asked.
        count()
        response = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    stored = response.get("ChecksumCRC32C")
    if stored is None or crc_int(stored.split("-")[0]) != crc or (
            response.get("ChecksumType") not in (None, "FULL_OBJECT")):
        count()
        s3.delete_object(Bucket=bucket, Key=key)
        raise ChecksumMismatch(f"s3://{bucket}/{key}: S3 stored CRC32C {stored} "
                               f"({response.get('ChecksumType')}), sent {crc_b64(crc)}; "
                               "object deleted")


class S3Replica:
    def __init__(self, settings: SyncSettings, client: Any = None, *,
                 copy_object_limit: int = COPY_OBJECT_LIMIT,
                 copy_part_size: int = COPY_PART_SIZE) -> None:
        """copy_object_limit and copy_part_size are S3's rules (above); a test lowers them to
        see the multipart copy on small objects."""
        # Parts of one file in flight at once, within the buffer budget (parts.py).
        self.parts_in_flight = max(1, min(PARTS_IN_FLIGHT,
                                          settings.buffer_bytes // settings.part_size))
        self.budget = BufferBudget(settings.buffer_bytes)
        if client is None:
            import boto3
            from botocore.config import Config

            # botocore keeps 10 connections by default; a worker's parts each need one.
            client = boto3.client("s3", config=Config(
                retries=S3_RETRIES,
                max_pool_connections=settings.workers * self.parts_in_flight + 2))
        client.meta.events.register("after-call.s3", self._after_call)
        self.s3, self.bucket, self.prefix = client, settings.bucket, settings.prefix
        self.settings = settings
        self._sse = sse_arguments(settings.kms_key_id)
        self.copy_object_limit, self.copy_part_size = copy_object_limit, copy_part_size
        self.counters = Counters()
        self._lock = threading.Lock()

    def _count(self, **kw: int) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self.counters, k, getattr(self.counters, k) + v)

    def _after_call(self, parsed: dict[str, Any], **_: Any) -> None:
        retried = parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0)
        if retried:
            self._count(retries=retried)

    # -- names -----------------------------------------------------------------------------------
    def key(self, path: str) -> str:
        return self.prefix + path.lstrip("/")

    def path(self, key: str) -> str:
        return "/" + key[len(self.prefix):]

    def metadata(self, entry: NamespaceEntry) -> dict[str, str]:
        values = {"owner": entry.owner, "group": entry.group, "permissions": entry.perms,
                  "replication": str(entry.replication)}
        meta = {_META[k]: quote(values[k], safe="") for k in self.settings.preserve if k in _META}
        meta[_MTIME] = str(entry.mtime)
        return meta

    # -- reading S3 --------------------------------------------------------------------------------
    def head(self, path: str) -> ObjectState | None:
        self._count(requests=1)
        try:
            r = self.s3.head_object(Bucket=self.bucket, Key=self.key(path), ChecksumMode="ENABLED")
        except self.s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        m = r.get("Metadata", {})
        file = FileState(size=int(r["ContentLength"]), mtime=int(m.get(_MTIME, -1)),
                         owner=unquote(m.get(_META["owner"], "")),
                         group=unquote(m.get(_META["group"], "")),
                         perms=unquote(m.get(_META["permissions"], "")),
                         replication=int(m.get(_META["replication"], 0)))
        crc = r.get("ChecksumCRC32C")
        return ObjectState(file, crc_int(crc) if crc else None, r.get("ChecksumType"))

    def paths_under(self, roots: frozenset[str] | set[str]) -> set[str]:
        """Paths of the objects at or under each root (one LIST per root and 1,000 keys)."""
        out: set[str] = set()
        for root in sorted(roots):
            prefix = self.key(root) if root != "/" else self.prefix
            for key in self._list(prefix):
                path = self.path(key)
                if under(path, root):
                    out.add(path)
        return out

    def _list(self, prefix: str) -> list[str]:
        keys = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                       Prefix=prefix):
            self._count(requests=1)
            keys.extend(o["Key"] for o in page.get("Contents", []))
        return keys

    def states_under(self, root: str) -> dict[str, FileState]:
        out = {}
        for path in sorted(self.paths_under({root})):
            state = self.head(path)
            if state is not None:
                out[path] = state.file
        return out

    # -- writing S3 ----------------------------------------------------------------------------------
    def upload(self, path: str, entry: NamespaceEntry, hdfs: HdfsFiles, checksum: FileChecksum,
               throttle: Throttle) -> None:
        """The file's bytes from HDFS into one object, verified (module doc)."""
        whole, own = JavaCrc("CRC32C"), None
        if checksum.algorithm == "COMPOSITE-CRC32" and not in_zone(entry):
            own = JavaCrc("CRC32")
        key, meta = self.key(path), self.metadata(entry)
        if entry.size <= self.settings.multipart_threshold:
            held = min(entry.size, self.settings.multipart_threshold)
            self.budget.take(held)
            try:
                body = bytearray()
                for buf, n in hdfs.read(path):
                    throttle.take(n)
                    whole.update(buf, 0, n)
                    if own is not None:
                        own.update(buf, 0, n)
                    body += memoryview(buf)[:n]
                self._check_read(path, entry, checksum, len(body), whole, own, hdfs)
                self._count(requests=1)
                r = self.s3.put_object(Bucket=self.bucket, Key=key, Body=bytes(body), Metadata=meta,
                                       ChecksumAlgorithm="CRC32C",
                                       ChecksumCRC32C=crc_b64(whole.value), **self._sse)
            finally:
                self.budget.give(held)
            self._check_stored(key, r, whole.value, read_back=in_zone(entry))
            self._count(uploads=1, bytes=len(body))
            return
        upload_id = self._start_upload(key, entry)
        try:
            parts = self._upload_parts(path, key, upload_id, hdfs, throttle, whole, own)
            self._check_read(path, entry, checksum, sum(size for _, size in parts), whole, own,
                             hdfs)
            self._count(requests=1)
            r = self.s3.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id,
                ChecksumCRC32C=crc_b64(whole.value), ChecksumType="FULL_OBJECT",
                MultipartUpload={"Parts": [p for p, _ in parts]})
        except BaseException:
            self._abort(key, upload_id)
            raise
        self._check_stored(key, r, whole.value, read_back=in_zone(entry))
        self._count(uploads=1, bytes=sum(size for _, size in parts))

    def append(self, path: str, entry: NamespaceEntry, hdfs: HdfsFiles,
               checksum: FileChecksum, throttle: Throttle) -> bool:
        """The object's bytes copied inside S3, then the file's bytes after them from HDFS,
        verified (module doc). False, having sent nothing, when the object cannot be the file's
        first bytes (missing, not smaller, under S3's 5 MiB part minimum, no full-object
        CRC32C); False, the upload aborted, when the CRC32Cs show the object's bytes are not
        the file's first ones: the caller uploads the file instead. Below multipart_threshold
        too: 4 requests more than one PutObject cost less than re-sending 5 MiB or more."""
        if checksum.algorithm != "COMPOSITE-CRC32C" or in_zone(entry):
            return False  # in an encryption zone `checksum` is of ciphertext: no proof
        have = self.head(path)
        if (have is None or have.crc32c is None
                or have.checksum_type not in (None, "FULL_OBJECT")
                or not MIN_PART <= have.file.size < entry.size):
            return False
        prefix = have.file.size
        ranges = prefix_ranges(prefix, self.copy_part_size)
        if len(ranges) + -(-(entry.size - prefix) // self.settings.part_size) > MAX_PARTS:
            return False
        key, source = self.key(path), {"Bucket": self.bucket, "Key": self.key(path)}
        new = JavaCrc("CRC32C")
        upload_id = self._start_upload(key, entry)
        try:
            parts = self._copy_parts(key, upload_id, source, ranges)
            sent = self._upload_parts(path, key, upload_id, hdfs, throttle, new, None,
                                      start=prefix, first_part=len(parts) + 1)
            added = sum(size for _, size in sent)
            if prefix + added != entry.size:
                raise ChecksumMismatch(f"{path}: read {added} bytes after byte {prefix}; HDFS "
                                       f"reports {entry.size} bytes (changed while read?)")
            is_prefix = crc32c_combine(have.crc32c, new.value, added) == checksum.value
            if is_prefix:
                self._count(requests=1)
                done = self.s3.complete_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload_id,
                    ChecksumCRC32C=crc_b64(checksum.value), ChecksumType="FULL_OBJECT",
                    MultipartUpload={"Parts": [*parts, *(p for p, _ in sent)]})
        except BaseException:
            self._abort(key, upload_id)
            raise
        if not is_prefix:
            self._abort(key, upload_id)
            log.info("%s: the object's %d bytes are not the file's first ones (CRC32C); "
                     "uploading the whole file", path, prefix)
            return False
        self._check_stored(key, done, checksum.value)
        self._count(uploads=1, appends=1, bytes=added)
        return True

    def _upload_parts(self, path: str, key: str, upload_id: str, hdfs: HdfsFiles,
                      throttle: Throttle, whole: JavaCrc, own: JavaCrc | None, *,
                      start: int = 0, first_part: int = 1) -> list[tuple[dict[str, Any], int]]:
        """The file's bytes from `start` on as parts `first_part`.., CRC32C'd into `whole`
        (and `own`, HDFS's own CRC kind when it is not CRC32C) as they stream."""
        def chunks() -> Iterator[tuple[Any, int]]:
            for buf, n in hdfs.read(path, start=start):
                throttle.take(n)
                whole.update(buf, 0, n)
                if own is not None:
                    own.update(buf, 0, n)
                yield buf, n

        return upload_parts(self.s3, self.bucket, key, upload_id, chunks(),
                            self.settings.part_size, count=lambda: self._count(requests=1),
                            first_part=first_part, in_flight=self.parts_in_flight,
                            budget=self.budget)

    def _abort(self, key: str, upload_id: str) -> None:
        self._count(requests=1)
        self.s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)

    def _check_read(self, path: str, entry: NamespaceEntry, checksum: FileChecksum, size: int,
                    whole: JavaCrc, own: JavaCrc | None, hdfs: HdfsFiles) -> None:
        if in_zone(entry):  # `checksum` is of ciphertext (encryption.py)
            problem = read_problem(path, entry, size, checksum, hdfs.checksum(path))
            if problem is not None:
                raise ChecksumMismatch(problem)
            return
        read = (own or whole).value
        if size != entry.size or read != checksum.value:
            raise ChecksumMismatch(
                f"{path}: read {size} bytes with {checksum.algorithm.split('-')[-1]} "
                f"{read:08x}; HDFS reports {entry.size} bytes, {checksum.value:08x} "
                "(changed while read?)")

    def _check_stored(self, key: str, response: dict[str, Any], crc: int, *,
                      read_back: bool = False) -> None:
        """read_back: from a HEAD of the stored object, not the write's response."""
        check_stored(self.s3, self.bucket, key, {} if read_back else response, crc,
                     count=lambda: self._count(requests=1))

    def server_copy(self, src: str, dst: str, entry: NamespaceEntry) -> bool:
        """Copies src -> dst inside S3 with dst's metadata, when src holds dst's bytes as far as
        size and mtime tell (a rename keeps both); False: read HDFS instead."""
        have = self.head(src)
        if (have is None or (have.file.size, have.file.mtime) != (entry.size, entry.mtime)
                or have.crc32c is None):
            return False
        self._copy(src, dst, entry, have.crc32c)
        self._count(server_copies=1)
        return True

    def update_metadata(self, path: str, entry: NamespaceEntry, checksum: FileChecksum) -> bool:
        """Metadata in place (CopyObject onto itself) when the object holds the file's bytes by
        S3's own CRC32C; False: read HDFS instead."""
        have = self.head(path)
        if (have is None or have.crc32c is None or checksum.algorithm != "COMPOSITE-CRC32C"
                or have.crc32c != checksum.value or have.file.size != entry.size):
            return False
        self._copy(path, path, entry, have.crc32c)
        self._count(metadata_updates=1)
        return True

    def _copy(self, src: str, dst: str, entry: NamespaceEntry, crc: int) -> None:
        """src's bytes to dst inside S3, with entry's metadata; the stored CRC32C must be crc."""
        if entry.size > self.copy_object_limit:
            self._part_copy(src, dst, entry, crc)
            return
        self._count(requests=1)
        r = self.s3.copy_object(Bucket=self.bucket, Key=self.key(dst),
                                CopySource={"Bucket": self.bucket, "Key": self.key(src)},
                                MetadataDirective="REPLACE", Metadata=self.metadata(entry),
                                ChecksumAlgorithm="CRC32C", **self._sse)
        self._check_stored(self.key(dst), r.get("CopyObjectResult", {}), crc)

    def _part_copy(self, src: str, dst: str, entry: NamespaceEntry, crc: int) -> None:
        """A copy over CopyObject's limit: UploadPartCopy of byte ranges into a multipart upload
        with the full-object CRC32C, which S3 checks against the parts it copied."""
        key, source = self.key(dst), {"Bucket": self.bucket, "Key": self.key(src)}
        part_size = max(self.copy_part_size, MIN_PART, -(-entry.size // MAX_PARTS))
        upload_id = self._start_upload(key, entry)
        try:
            parts = self._copy_parts(key, upload_id, source, [
                (start, min(start + part_size, entry.size) - 1)
                for start in range(0, entry.size, part_size)])
            self._count(requests=1)
            done = self.s3.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id, ChecksumCRC32C=crc_b64(crc),
                ChecksumType="FULL_OBJECT", MultipartUpload={"Parts": parts})
        except BaseException:
            self._abort(key, upload_id)
            raise
        self._check_stored(key, done, crc)

    def _start_upload(self, key: str, entry: NamespaceEntry) -> str:
        """A multipart upload whose parts S3 checks against one full-object CRC32C."""
        self._count(requests=1)
        return self.s3.create_multipart_upload(
            Bucket=self.bucket, Key=key, Metadata=self.metadata(entry),
            ChecksumAlgorithm="CRC32C", ChecksumType="FULL_OBJECT", **self._sse)["UploadId"]

    def _copy_parts(self, key: str, upload_id: str, source: dict[str, str],
                    ranges: Iterable[tuple[int, int]]) -> list[dict[str, Any]]:
        """Parts 1.. of the upload copied inside S3 (UploadPartCopy), one per inclusive range."""
        parts = []
        for number, (start, end) in enumerate(ranges, 1):
            self._count(requests=1)
            r = self.s3.upload_part_copy(
                Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number,
                CopySource=source, CopySourceRange=f"bytes={start}-{end}")["CopyPartResult"]
            parts.append({"PartNumber": number, "ETag": r["ETag"],
                          **({"ChecksumCRC32C": r["ChecksumCRC32C"]}
                             if r.get("ChecksumCRC32C") else {})})
        return parts

    def delete(self, path: str) -> None:
        self._count(requests=1, deletes=1)
        self.s3.delete_object(Bucket=self.bucket, Key=self.key(path))

    def abort_open_uploads(self) -> int:
        """Aborts every multipart upload left open under the prefix (a SIGKILL mid-copy): the
        sync is the only writer of its prefix, so none of them can be another's."""
        aborted = 0
        for page in self.s3.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.bucket, Prefix=self.prefix):
            for u in page.get("Uploads", []):
                self.s3.abort_multipart_upload(Bucket=self.bucket, Key=u["Key"],
                                               UploadId=u["UploadId"])
                aborted += 1
        return aborted
