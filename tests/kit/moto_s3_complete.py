"""moto 5.2's CompleteMultipartUpload made to do what S3 does with a full-object checksum, for the
tests and benches that count the sync's requests.

S3 (API reference, CompleteMultipartUpload): with `ChecksumType=FULL_OBJECT` and
`x-amz-checksum-crc32c` the request names the checksum of the whole object; S3 computes the
object's CRC32C from its parts and refuses the upload (400 BadDigest, no object written, the
upload left open) when the two differ, and its reply carries `ChecksumCRC32C` and
`ChecksumType`. moto 5.2 stores the computed CRC32C but neither compares it with the request's
nor returns it, so a client must ask with a HEAD (docs/sync.md, "Append"), one request that S3
never needs: the sync's append counted 6 requests on moto where S3 takes 5.

`complete_checks_full_object_crc32c()` patches both, while the context lasts, in this process
(the moto server of tests/conftest.py and bench.sync serves in it). Everything else is moto's:
the object, its stored checksum, the parts' order and sizes. A wrong checksum now fails the
Complete as S3's does; tests/integration/hdfs/test_sync.py's corrupted part shows both sides.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.s3.exceptions import S3ClientError
from moto.s3.models import FakeMultipart
from moto.s3.responses import S3Response

_request = threading.local()
_END = b"</CompleteMultipartUploadResult>"


class BadDigest(S3ClientError):
    code = "BadDigest"


@contextmanager
def complete_checks_full_object_crc32c() -> Iterator[None]:
    complete, post = FakeMultipart.complete, S3Response._key_response_post

    def checked_complete(self: FakeMultipart, body: Any) -> Any:
        value, etag, details = complete(self, body)
        asked = getattr(_request, "crc32c", None)
        if (asked is not None and details is not None and details[0] == "FULL_OBJECT"
                and self.metadata.get("x-amz-checksum-algorithm") == "CRC32C"
                and details[1] != asked):
            raise BadDigest("BadDigest", f"The CRC32C you specified ({asked}) did not match "
                            f"the calculated checksum ({details[1]}).")
        return value, etag, details

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

    FakeMultipart.complete = checked_complete  # type: ignore[method-assign]
    S3Response._key_response_post = replying_post  # type: ignore[method-assign]
    try:
        yield
    finally:
        FakeMultipart.complete = complete  # type: ignore[method-assign]
        S3Response._key_response_post = post  # type: ignore[method-assign]
