"""The test kit's CompleteMultipartUpload (tests/kit/moto_s3_complete.py), which the sync's
integration tests and bench.sync run moto with: the object it completes part by part is the
object moto's own completion makes (bytes, ETag, stored CRC32C), its reply carries the CRC32C
as S3's does, and a wrong full-object CRC32C is refused with no object written and the upload
left open, as S3 refuses it. moto in-process."""

from __future__ import annotations

import base64

import crc32c
import pytest
from botocore.exceptions import ClientError

from tests.kit.moto_s3_complete import complete_checks_full_object_crc32c

MIB = 1024 * 1024
# Two parts at S3's 5 MiB minimum and a short last one.
PARTS = [bytes([n]) * 5 * MIB for n in (1, 2)] + [b"tail" * 300]


def b64(value: int) -> str:
    return base64.b64encode(value.to_bytes(4, "big")).decode()



def start(s3, key: str) -> tuple[str, list[dict[str, object]]]:
    """A FULL_OBJECT CRC32C upload of PARTS, as the sync makes one; not completed."""
    upload = s3.create_multipart_upload(Bucket="replica", Key=key, Metadata={"hdfs-mtime": "7"},
                                        ChecksumAlgorithm="CRC32C",
                                        ChecksumType="FULL_OBJECT")["UploadId"]
    parts = []
    for number, body in enumerate(PARTS, 1):
        r = s3.upload_part(Bucket="replica", Key=key, UploadId=upload, PartNumber=number,
                           Body=body, ChecksumCRC32C=b64(crc32c.crc32c(body)))
        parts.append({"PartNumber": number, "ETag": r["ETag"]})
    return upload, parts


def complete(s3, key: str, upload: str, parts: list[dict[str, object]], crc: int):
    return s3.complete_multipart_upload(Bucket="replica", Key=key, UploadId=upload,
                                        ChecksumCRC32C=b64(crc), ChecksumType="FULL_OBJECT",
                                        MultipartUpload={"Parts": parts})


def test_the_kit_completes_the_object_moto_itself_would_and_replies_with_its_crc32c(s3):
    whole = b"".join(PARTS)
    own_upload, own_parts = start(s3, "own")
    complete(s3, "own", own_upload, own_parts, crc32c.crc32c(whole))  # moto's own path
    with complete_checks_full_object_crc32c():
        upload, parts = start(s3, "kit")
        reply = complete(s3, "kit", upload, parts, crc32c.crc32c(whole))
    assert reply["ChecksumCRC32C"] == b64(crc32c.crc32c(whole))
    assert reply["ChecksumType"] == "FULL_OBJECT"
    own = s3.head_object(Bucket="replica", Key="own", ChecksumMode="ENABLED")
    kit = s3.head_object(Bucket="replica", Key="kit", ChecksumMode="ENABLED")
    for field in ("ETag", "ContentLength", "ChecksumCRC32C", "ChecksumType", "Metadata"):
        assert kit[field] == own[field], field
    assert s3.get_object(Bucket="replica", Key="kit")["Body"].read() == whole
    assert s3.list_multipart_uploads(Bucket="replica").get("Uploads", []) == []


def test_a_wrong_crc32c_is_refused_with_no_object_and_the_upload_left_open(s3):
    whole = b"".join(PARTS)
    with complete_checks_full_object_crc32c():
        upload, parts = start(s3, "kit")
        with pytest.raises(ClientError) as refused:
            complete(s3, "kit", upload, parts, crc32c.crc32c(whole) ^ 1)
        assert refused.value.response["Error"]["Code"] == "BadDigest"
        assert "Contents" not in s3.list_objects_v2(Bucket="replica")
        assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="replica")["Uploads"]
                ] == [upload]
        complete(s3, "kit", upload, parts, crc32c.crc32c(whole))  # the right one still can
    assert s3.get_object(Bucket="replica", Key="kit")["Body"].read() == whole
