"""The test kit's CompleteMultipartUpload (tests/kit/moto_s3_complete.py), which the sync's
integration tests and bench.sync run moto with: the object it completes part by part is the
object moto's own completion makes (bytes, ETag, stored CRC32C), its reply carries the CRC32C
as S3's does, and a wrong full-object CRC32C is refused with no object written and the upload
left open, as S3 refuses it. moto in-process."""

from __future__ import annotations

import base64

import boto3
import crc32c
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.s3.models import S3Backend

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


def test_an_upload_without_checksums_completes_the_object_moto_itself_would(s3, monkeypatch):
    """S3A's uploads (DistCp's, in bench.sync) carry no checksum: the kit completes them part by
    part too (moto's own completion is not called), into the object moto's own path makes,
    with no checksum stored."""
    plain = boto3.client("s3", config=Config(request_checksum_calculation="when_required"))
    own_path = S3Backend.complete_multipart_upload
    calls: list[str] = []

    def counted(self, bucket_name, multipart_id, body):
        calls.append(multipart_id)
        return own_path(self, bucket_name, multipart_id, body)

    monkeypatch.setattr(S3Backend, "complete_multipart_upload", counted)

    def upload(key: str) -> None:
        started = plain.create_multipart_upload(Bucket="replica", Key=key,
                                                Metadata={"hdfs-mtime": "7"})["UploadId"]
        parts = [{"PartNumber": n, "ETag": plain.upload_part(
            Bucket="replica", Key=key, UploadId=started, PartNumber=n, Body=body)["ETag"]}
            for n, body in enumerate(PARTS, 1)]
        plain.complete_multipart_upload(Bucket="replica", Key=key, UploadId=started,
                                        MultipartUpload={"Parts": parts})

    upload("own")  # moto's own path
    assert len(calls) == 1
    with complete_checks_full_object_crc32c():
        upload("kit")
    assert len(calls) == 1, "the kit handed an upload without checksums to moto's own path"
    own = s3.head_object(Bucket="replica", Key="own", ChecksumMode="ENABLED")
    kit = s3.head_object(Bucket="replica", Key="kit", ChecksumMode="ENABLED")
    for field in ("ETag", "ContentLength", "Metadata"):
        assert kit[field] == own[field], field
    assert "ChecksumCRC32C" not in kit and "ChecksumCRC32C" not in own
    assert s3.get_object(Bucket="replica", Key="kit")["Body"].read() == b"".join(PARTS)
