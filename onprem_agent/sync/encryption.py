"""Encryption on both sides of the sync (docs/sync.md, "Encryption zones"): files read from HDFS
encryption zones, and objects written under the destination's KMS key.

In an encryption zone the DataNodes store ciphertext (AES-CTR under a data key of the file's
own, which the KMS wraps) and `getFileChecksum` covers those stored bytes, while the sync's
client reads plaintext: HDFS's checksum never equals the CRC32C of what lands in S3, so the
verification of replica.py's module doc would fail every file there. A file in a zone is
verified by what the sync itself read instead:
1. the CRC32C of the plaintext, computed while reading (java.util.zip.CRC32C), sent with every
   part and as the full-object checksum: S3 checks the bytes it got against them;
2. a read-back: S3's full-object CRC32C of the stored object (a HEAD) equals (1);
3. the file unchanged while read: the bytes read are the file's length, and its ciphertext
   checksum after the read equals the one taken before it. An append, a truncate or an
   overwrite changes the ciphertext (a new file gets a new data key and IV), so equal checksums
   mean the bytes read are the file's. The ciphertext checksum is only ever compared with
   itself, never with a CRC of plaintext.

Detection: FileStatus.isEncrypted(), a flag of the status the sync already fetches for every
file it copies (getFileInfo), so it costs nothing and is never stale. The alternative,
HdfsAdmin.getEncryptionZoneForPath, is a NameNode call per lookup; cached per covered root it
goes stale, since any empty directory under a root can become a zone at any time.

Objects land with SSE-KMS under [sync] kms_key_id when it is set (every write: PutObject,
CreateMultipartUpload, CopyObject; a copy not told again gets the bucket's default
encryption), else under the bucket's default encryption.
"""

from __future__ import annotations

from typing import Any

from onprem_agent.live.snapshot import NamespaceEntry
from onprem_agent.sync.hdfs_files import FileChecksum


def in_zone(entry: NamespaceEntry) -> bool:
    """The file's stored bytes are ciphertext: its HDFS checksum cannot verify a plaintext
    copy."""
    return bool(entry.encrypted)


def read_problem(path: str, entry: NamespaceEntry, size: int, before: FileChecksum,
                 after: FileChecksum) -> str | None:
    """Why the plaintext read from a file in a zone is not the file's (None: it is): the count
    read against the file's length, the ciphertext checksums before and after the read (3)."""
    if size != entry.size:
        return (f"{path}: read {size} bytes of plaintext; HDFS reports {entry.size} bytes "
                "(changed while read?)")
    if after != before:
        return (f"{path}: the ciphertext checksum changed while the file was read "
                f"({before.algorithm} {before.value:08x} -> {after.algorithm} "
                f"{after.value:08x})")
    return None


def sse_arguments(kms_key_id: str | None) -> dict[str, Any]:
    """What every object-writing S3 call adds for the destination's key ({}: none set)."""
    if kms_key_id is None:
        return {}
    return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key_id}
