"""moto 5.2's CompleteMultipartUpload made to do what S3 does with a full-object checksum, for the
tests and benches that count the sync's requests and time its lag.

S3 (API reference, CompleteMultipartUpload): with `ChecksumType=FULL_OBJECT` and
`x-amz-checksum-crc32c` the request names the checksum of the whole object; S3 computes the
object's CRC32C from its parts and refuses the upload (400 BadDigest, no object written, the
upload left open) when the two differ, and its reply carries `ChecksumCRC32C` and
`ChecksumType`. moto 5.2 stores the computed CRC32C but neither compares it with the request's
nor returns it, so a client must ask with a HEAD (docs/sync.md, "Append"), one request that S3
never needs: the sync's append counted 6 requests on moto where S3 takes 5.

moto also assembles the object in memory: every part read twice, the whole object copied into
two bytearrays, each copied again into bytes, then written into the key's buffer (and spilled to
a temporary file). For 1 GB that is ~5 GB of copies, most of them single memcpys that hold the
server's Python: 14 s here in-process, and every other request to the server (S3 and DynamoDB
alike) waited up to 3.7 s meanwhile; bench.sync saw one DynamoDB PutItem take 3.2 s while it
ran (docs/sync.md, "Measured"). S3 serves other requests while it completes an upload. A
FULL_OBJECT CRC32C upload (the sync's) is therefore completed here part by part: each part's
bytes read once, CRC32C'd (the `crc32c` package releases the GIL) and written into the new
key's buffer, the key made visible only once whole, as S3 shows an object only once complete.
So is an upload without checksums (S3A's: DistCp's 1 GB file in bench.sync), stored without
one: both tools' large copies then pay the same for their completion, not one moto's slow path.

`complete_checks_full_object_crc32c()` patches both, while the context lasts, in this process
(the moto server of tests/conftest.py and bench.sync serves in it). Uploads with another
checksum (boto3's default CRC32, COMPOSITE) take moto's own path. Everything else is moto's:
the key, its metadata, tags, ACL and notification, the parts' order and size rules. A wrong
checksum now fails the Complete as S3's does; tests/integration/hdfs/test_sync.py's corrupted
part shows both sides.
"""

from __future__ import annotations

import base64
import codecs
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import crc32c
from moto.moto_api._internal import mock_random as random
from moto.s3 import notifications
from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML, S3ClientError
from moto.s3.models import S3_UPLOAD_PART_MIN_SIZE, FakeKey, FakeMultipart, S3Backend
from moto.s3.responses import S3Response
from moto.utilities.utils import md5_hash

_request = threading.local()
_END = b"</CompleteMultipartUploadResult>"


class BadDigest(S3ClientError):
    code = "BadDigest"


def _parts(multipart: FakeMultipart, body: Iterator[tuple[int, str]]) -> list[FakeKey]:
    """The listed parts, checked as moto's FakeMultipart.complete checks them."""
    parts: list[FakeKey] = []
    for number, etag in body:
        part = multipart.parts.get(number)
        if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
            raise InvalidPart()
        if parts and parts[-1].contentsize < S3_UPLOAD_PART_MIN_SIZE:
            raise EntityTooSmall()
        parts.append(part)
    if not parts:
        raise MalformedXML
    return parts


def _complete_part_by_part(backend: S3Backend, bucket_name: str, multipart: FakeMultipart,
                           body: Iterator[tuple[int, str]], *, full_crc32c: bool) -> FakeKey:
    """moto's complete_multipart_upload, one part in memory at a time. `full_crc32c`: a
    FULL_OBJECT CRC32C upload, BadDigest (the upload left open) when the request's CRC32C is not
    the parts'; else an upload without checksums (S3A's, DistCp's), stored without one."""
    bucket = backend.get_bucket(bucket_name)
    parts = _parts(multipart, body)
    crc, md5s = 0, bytearray()
    for part in parts:
        if full_crc32c:
            crc = crc32c.crc32c(part.value, crc)
        md5s.extend(codecs.decode(part.etag.replace('"', ""), "hex"))
    stored = base64.b64encode(crc.to_bytes(4, "big")).decode()
    asked = getattr(_request, "crc32c", None)
    if full_crc32c and asked is not None and asked != stored:
        raise BadDigest("BadDigest", f"The CRC32C you specified ({asked}) did not match the "
                        f"calculated checksum ({stored}).")
    default = (bucket.encryption or {}).get("Rule", {}).get(
        "ApplyServerSideEncryptionByDefault", {})
    key = FakeKey(name=multipart.key_name, bucket_name=bucket_name, value=b"",
                  account_id=backend.account_id, region_name=backend.region_name,
                  storage=multipart.storage,
                  etag=f"{md5_hash(bytes(md5s)).hexdigest()}-{len(parts)}",
                  is_versioned=bucket.is_versioned,
                  version_id=str(random.uuid4()) if bucket.is_versioned else "null",
                  multipart=multipart,
                  encryption=multipart.sse_encryption or default.get("SSEAlgorithm"),
                  kms_key_id=multipart.kms_key_id or default.get("KMSMasterKeyID"),
                  bucket_key_enabled=(bucket.encryption or {}).get("Rule", {}).get(
                      "BucketKeyEnabled"))
    with key.lock:
        for part in parts:
            key._value_buffer.write(part.value)
        key.contentsize = sum(part.contentsize for part in parts)
    key.set_metadata(multipart.metadata)
    if full_crc32c:
        key.checksum_algorithm = "CRC32C"
        key.checksum_type, key.checksum_value, key.checksum_parts = "FULL_OBJECT", stored, 1
    del bucket.multiparts[multipart.id]
    keys = bucket.keys.getlist(key.name, []) if bucket.is_versioned else []
    bucket.keys.setlist(key.name, [*keys, key])  # visible now, whole
    backend.put_object_tagging(key, multipart.tags)
    backend.put_object_acl(bucket_name=bucket_name, key_name=key.name, acl=multipart.acl,
                           disable_notification=True)
    notifications.send_event(
        backend.account_id,
        notifications.S3NotificationEvent.OBJECT_CREATED_COMPLETE_MULTIPART_UPLOAD_EVENT,
        bucket, key)
    return key


@contextmanager
def complete_checks_full_object_crc32c() -> Iterator[None]:
    complete, post = S3Backend.complete_multipart_upload, S3Response._key_response_post

    def complete_upload(self: S3Backend, bucket_name: str, multipart_id: str,
                        body: Iterator[tuple[int, str]]) -> FakeKey | None:
        multipart = self.get_bucket(bucket_name).multiparts[multipart_id]
        algorithm = multipart.metadata.get("x-amz-checksum-algorithm")
        full_crc32c = (algorithm == "CRC32C"
                       and multipart.metadata.get("x-amz-checksum-type") == "FULL_OBJECT")
        if full_crc32c or algorithm is None:
            return _complete_part_by_part(self, bucket_name, multipart, body,
                                          full_crc32c=full_crc32c)
        return complete(self, bucket_name, multipart_id, body)

    def replying_post(self: S3Response, request: Any, body: bytes, bucket_name: str,
                      query: dict[str, Any], key_name: str) -> Any:
        if not query.get("uploadId"):
            return post(self, request, body, bucket_name, query, key_name)
        _request.crc32c = self.headers.get("x-amz-checksum-crc32c")
        try:
            status, headers, reply = post(self, request, body, bucket_name, query, key_name)
        finally:
            _request.crc32c = None
        key = self.backend.get_object(bucket_name, key_name)
        if (status == 200 and key is not None and key.checksum_type == "FULL_OBJECT"
                and key.checksum_algorithm == "CRC32C"):
            raw = reply.encode() if isinstance(reply, str) else reply
            fields = (f"<ChecksumCRC32C>{key.checksum_value}</ChecksumCRC32C>"
                      "<ChecksumType>FULL_OBJECT</ChecksumType>").encode()
            reply = raw.replace(_END, fields + _END)
        return status, headers, reply

    S3Backend.complete_multipart_upload = complete_upload  # type: ignore[method-assign]
    S3Response._key_response_post = replying_post  # type: ignore[method-assign]
    try:
        yield
    finally:
        S3Backend.complete_multipart_upload = complete  # type: ignore[method-assign]
        S3Response._key_response_post = post  # type: ignore[method-assign]
