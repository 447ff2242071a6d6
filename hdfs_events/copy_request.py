"""The copy request: ask the on-prem copy worker to copy an S3 prefix into an HDFS directory.

Wire form (one SQS message body, UTF-8 JSON, versioned like the event envelope):

    {"v": 1,
     "request_id": "daily-sales-2026-11-20",
     "source": "s3://lake-exports/sales/dt=2026-11-20/",
     "destination": "/data/imports/sales/dt=2026-11-20",
     "mode": "update",                                   # overwrite | update | skip-existing
     "manifest": [{"key": "sales/dt=2026-11-20/part-0.parquet", "size": 1234}],  # optional
     "notify": "arn:aws:sns:eu-west-1:123456789012:copy-outcomes"}               # optional

The optional `manifest` field is the request's *copy listing* (DistCp's word for the files a
copy takes; `CopyRequest.copy_listing`), not a txid range's manifest (hdfs_events/manifest.py):
the wire name stays for the requests and scripts that send it. Without one the source must hold
a `_SUCCESS` marker (what Hadoop and Spark committers write last), so a half-written output is
never copied. With one, the copy listing is the trusted index (the S3mper idea): every listed
key must exist in S3 with that size, only listed keys are copied, and the destination is checked
against it.

Everything here is pure: `decode_request` turns untrusted text into a `CopyRequest` or raises
`CopyRequestError` naming the field. The worker adds the deployment's allow-lists on top; this
module rejects what no deployment should accept (traversal, control characters, glob and URI
metacharacters, other schemes, wrong types, oversize input).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hdfs_events.envelope import SQS_MAX_MESSAGE_BYTES
from hdfs_events.ids import sqs_safe_id
from hdfs_events.validation import JsonTextError, parse_json, preview

COPY_REQUEST_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})
FIELDS = ("v", "request_id", "source", "destination", "mode", "manifest", "notify")
REQUIRED = ("v", "request_id", "source", "destination", "mode")

MAX_REQUEST_BYTES = SQS_MAX_MESSAGE_BYTES
MAX_COPY_LISTING_ENTRIES = 10_000
MAX_OBJECT_SIZE = 5 * 1024**4  # S3's largest object: 5 TiB
MAX_S3_KEY_BYTES = 1024  # S3 key limit, in UTF-8 bytes
MAX_HDFS_PATH_CHARS = 4000
# HDFS default dfs.namenode.fs-limits.max-component-length
MAX_COMPONENT_CHARS = 255
SUCCESS_MARKER = "_SUCCESS"

REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")
# S3 bucket naming rules (lowercase, digits, '.', '-'; 3-63 characters).
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
SNS_TOPIC_ARN = re.compile(
    r"arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?"
)
SCHEMES = ("s3://", "s3a://")
# Characters refused in any path or key, beyond control characters:
#   * ? [ ] { } \  are glob syntax: distcp expands globs in source paths, so "a{b,../c}" could
#                  reach outside an allowed prefix without a literal ".." component.
#   :              HDFS refuses ':' in a path component (DFSUtil.isValidName).
#   #              a URI fragment to Hadoop's Path.
#   ; & | $ ` < > " '   shell syntax. The worker never uses a shell (distcp gets an argument
#                  list), but paths from here end up in operators' scripts and copy-pasted
#                  commands; no dataset needs these characters in its name.
_FORBIDDEN = frozenset("*?[]{}\\:#;&|$`<>\"'")
# Characters that render as nothing, beyond the Cf/Zs categories refused as such: Unicode's
# Default_Ignorable_Code_Point letters and marks (Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
# the combining grapheme joiner, Khmer inherent vowels, Mongolian and other variation
# selectors) and the braille blank U+2800, which fonts draw empty.
_INVISIBLE = frozenset([0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0,
                        *range(0x180B, 0x1810), *range(0xFE00, 0xFE10),
                        *range(0xE0100, 0xE01F0)])
# Look-alikes of '/', '.' and '\' that NFKC does not map to them (those it does, such as the
# fullwidth solidus U+FF0F or the one-dot leader U+2024, are caught by normalizing): from
# Unicode's confusables.txt for the three characters, less letters, digits and marks of
# living scripts (and the katakana middle dot and CJK full stop, common in Japanese names).
_LOOKALIKES = frozenset([
    # '/': division slash, fraction slash, big solidus, box diagonal, rising diagonal, kana
    # repeat mark, combining solidus overlays, Philippine single punctuation.
    0x2215, 0x2044, 0x29F8, 0x2571, 0x27CB, 0x3033, 0x0337, 0x0338, 0x1735,
    # '.': middle dot, hyphenation point, bullet and dot operators, word-separator and raised
    # dots, Syriac and Arabic full stops, Kharoshthi dot.
    0x00B7, 0x2027, 0x2219, 0x22C5, 0x2E31, 0x2E33, 0x0701, 0x0702, 0x06D4, 0x10A50,
    # backslash: set minus, reverse solidus operator, big reverse solidus, subset diagonal.
    0x2216, 0x29F5, 0x29F9, 0x27CD,
])


class CopyMode(StrEnum):
    OVERWRITE = "overwrite"  # distcp -overwrite: replace every destination file
    UPDATE = "update"  # distcp -update: copy files that are missing or differ in size/checksum
    SKIP_EXISTING = "skip-existing"  # copy only files not already at the destination


class TransferState(StrEnum):
    """States of a request in the transfers table (item key names.TRANSFERS_PK)."""

    REQUESTED = "requested"  # submitted (written by `hdfs-events copy submit`)
    RUNNING = "running"  # a worker is copying (attempts counts the starts)
    VERIFIED = "verified"  # copied and the destination listing matched: done
    FAILED = "failed"  # the last attempt failed; retried until `final` is true
    REJECTED = "rejected"  # can never succeed (invalid, not allowed, lying manifest): done


class CopyRequestError(ValueError):
    """A request that does not follow the contract; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


@dataclass(frozen=True, slots=True)
class CopyListingEntry:
    key: str  # full S3 key (inside the source prefix)
    size: int


@dataclass(frozen=True, slots=True)
class S3Location:
    bucket: str
    prefix: str  # "" (whole bucket) or ends with "/"

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def s3a_uri(self) -> str:
        """What distcp reads: s3a is Hadoop's S3 connector (s3:// means nothing to stock Hadoop)."""
        return f"s3a://{self.bucket}/{self.prefix}"


@dataclass(frozen=True, slots=True)
class CopyRequest:
    request_id: str
    source: S3Location
    destination: str  # absolute HDFS path, no trailing slash
    mode: CopyMode
    copy_listing: tuple[CopyListingEntry, ...] | None = None  # wire field "manifest"
    notify: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "v": COPY_REQUEST_VERSION,
            "request_id": self.request_id,
            "source": self.source.uri,
            "destination": self.destination,
            "mode": str(self.mode),
        }
        if self.copy_listing is not None:
            d["manifest"] = [{"key": e.key, "size": e.size} for e in self.copy_listing]
        if self.notify is not None:
            d["notify"] = self.notify
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @property
    def fingerprint(self) -> str:
        """Digest of the canonical request: a request_id reused for a different copy is caught
        by comparing it with the one recorded in the transfers table."""
        return hashlib.sha256(self.to_json().encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def message_group_id(self) -> str:
        """Requests for one destination run one at a time (FIFO group), others in parallel."""
        return sqs_safe_id(f"copy:{self.destination}")

    @property
    def deduplication_id(self) -> str:
        return sqs_safe_id(self.request_id)

    def relative_name(self, key: str) -> str:
        return key[len(self.source.prefix):]


def make_request(
    *,
    request_id: str,
    source: str,
    destination: str,
    mode: str,
    copy_listing: Iterable[Mapping[str, Any]] | None = None,
    notify: str | None = None,
) -> CopyRequest:
    """A validated request from Python values (the CLI's path); raises CopyRequestError."""
    d: dict[str, Any] = {"v": COPY_REQUEST_VERSION, "request_id": request_id, "source": source,
                         "destination": destination, "mode": mode}
    if copy_listing is not None:
        d["manifest"] = [dict(e) for e in copy_listing]
    if notify is not None:
        d["notify"] = notify
    return request_from_dict(d)


def decode_request(body: str | bytes) -> CopyRequest:
    """Parses and validates an untrusted message body."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CopyRequestError("body", f"not UTF-8: {exc}") from exc
    if not isinstance(body, str):
        raise CopyRequestError("body", f"must be text, got {type(body).__name__}")
    if len(body.encode("utf-8", "surrogatepass")) > MAX_REQUEST_BYTES:
        raise CopyRequestError("body", f"larger than {MAX_REQUEST_BYTES} bytes")
    try:
        # The contract's reader: nesting bounded before parsing, duplicate keys refused (json
        # keeps the last, so {"destination": "/ok", "destination": "/etc"} would pass a
        # reviewer's eye and do something else), no NaN, no number past CPython's limit.
        doc = parse_json(body)
    except JsonTextError as exc:
        raise CopyRequestError(_field_name(exc.field or "body"), f"the body {exc}") from exc
    return request_from_dict(doc)


def request_from_dict(doc: Any) -> CopyRequest:
    if not isinstance(doc, dict):
        raise CopyRequestError("body", f"must be a JSON object, got {_json_type(doc)}")
    version = doc.get("v")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:  # not bool, not {}
        raise CopyRequestError(
            "v", f"unsupported version {preview(version)}; this reader knows "
            f"{sorted(SUPPORTED_VERSIONS)}"
        )
    unknown = sorted(k for k in doc if k not in FIELDS)
    if unknown:
        raise CopyRequestError(_field_name(unknown[0]), f"unknown field(s) {preview(unknown)}")
    for name in REQUIRED:
        if doc.get(name) is None:
            raise CopyRequestError(name, "is required")
    request_id = _request_id(doc["request_id"])
    source = parse_s3_uri(doc["source"])
    destination = validate_hdfs_path(doc["destination"], "destination")
    mode = _mode(doc["mode"])
    copy_listing = None
    if doc.get("manifest") is not None:
        copy_listing = _copy_listing(doc["manifest"], source)
    notify = None
    if doc.get("notify") is not None:
        notify = _notify(doc["notify"])
    return CopyRequest(request_id=request_id, source=source, destination=destination,
                       mode=mode, copy_listing=copy_listing, notify=notify)


def parse_s3_uri(value: Any, field: str = "source") -> S3Location:
    """`s3://bucket/prefix/` or `s3a://...` as a location whose prefix names a directory."""
    text = _string(value, field)
    scheme = next((s for s in SCHEMES if text.startswith(s)), None)
    if scheme is None:
        head = text.split("://", 1)[0] if "://" in text else text[:16]
        raise CopyRequestError(field, f"scheme must be s3:// or s3a://, got {preview(head)}")
    bucket, _, prefix = text[len(scheme):].partition("/")
    if not BUCKET.fullmatch(bucket) or ".." in bucket:
        raise CopyRequestError(field, f"bucket {preview(bucket)} is not a valid S3 bucket name")
    if prefix and not prefix.endswith("/"):
        prefix += "/"  # a directory: "out/part" must not also match "out/part-2/"
    check_key(prefix, field)
    return S3Location(bucket=bucket, prefix=prefix)


def check_key(key: str, field: str) -> None:
    """An S3 key (or key prefix ending in '/') that is safe to hand to distcp and HDFS."""
    if len(key.encode("utf-8", "surrogatepass")) > MAX_S3_KEY_BYTES:
        raise CopyRequestError(field, f"key longer than {MAX_S3_KEY_BYTES} bytes")
    if key.startswith("/"):
        raise CopyRequestError(field, "key must not start with '/'")
    if not key:
        return  # the whole bucket
    parts = key.split("/")
    if key.endswith("/"):
        parts = parts[:-1]
    for part in parts:
        _check_component(part, field)


def validate_hdfs_path(value: Any, field: str) -> str:
    """An absolute HDFS path in canonical form (no trailing '/', no '.', '..' or '//')."""
    text = _string(value, field)
    if len(text) > MAX_HDFS_PATH_CHARS:
        raise CopyRequestError(field, f"longer than {MAX_HDFS_PATH_CHARS} characters")
    if not text.startswith("/"):
        raise CopyRequestError(field, f"must be an absolute HDFS path starting with '/', "
                                      f"got {_preview(text)}")
    if text == "/":
        raise CopyRequestError(field, "must not be the root directory")
    trimmed = text[:-1] if text.endswith("/") else text
    for part in trimmed[1:].split("/"):
        _check_component(part, field)
    return trimmed


def is_within(path: str, root: str) -> bool:
    """True when `path` is `root` or below it, on path-component boundaries (both canonical,
    '/'-separated; `root` may end with '/')."""
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def _check_component(part: str, field: str) -> None:
    if part == "":
        raise CopyRequestError(field, "empty path component ('//')")
    if part in (".", ".."):
        raise CopyRequestError(field, f"path component {part!r} is not allowed")
    if len(part) > MAX_COMPONENT_CHARS:
        raise CopyRequestError(field, f"path component longer than {MAX_COMPONENT_CHARS} "
                                      "characters")
    for ch in part:
        if ch in _FORBIDDEN:
            raise CopyRequestError(field, f"character {ch!r} is not allowed")
        if ch.isascii():
            if ch.isprintable():
                continue
            raise CopyRequestError(field, f"control character U+{ord(ch):04X} is not allowed")
        # Cc: control characters (NUL, newline, ESC...); Cf: invisible formatting such as the
        # right-to-left override that makes a path read differently from what it is; Zl/Zp:
        # line and paragraph separators; Cs: lone surrogates; Co/Cn: private-use and unassigned
        # code points, which render as whatever a font makes of them.
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            raise CopyRequestError(field, f"control or format character U+{ord(ch):04X} "
                                          "is not allowed")
        if unicodedata.category(ch) == "Zs" or ord(ch) in _INVISIBLE:
            raise CopyRequestError(field, f"invisible character U+{ord(ch):04X} "
                                          f"({unicodedata.name(ch, 'unnamed')}) is not allowed")
        if ord(ch) in _LOOKALIKES or any(c in "/.\\" for c in unicodedata.normalize("NFKC", ch)):
            raise CopyRequestError(field, f"character U+{ord(ch):04X} "
                                          f"({unicodedata.name(ch, 'unnamed')}) looks like "
                                          "'/', '.' or '\\' and is not allowed: a path must "
                                          "read as what it is")


def _copy_listing(value: Any, source: S3Location) -> tuple[CopyListingEntry, ...]:
    if not isinstance(value, list):
        raise CopyRequestError("manifest", f"must be a list, got {_json_type(value)}")
    if not value:
        raise CopyRequestError("manifest", "must not be empty (omit it to rely on _SUCCESS)")
    if len(value) > MAX_COPY_LISTING_ENTRIES:
        raise CopyRequestError("manifest", f"{len(value)} entries; at most "
                                           f"{MAX_COPY_LISTING_ENTRIES} allowed")
    entries: list[CopyListingEntry] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        where = f"manifest[{i}]"
        if not isinstance(item, dict):
            raise CopyRequestError(where, f"must be an object, got {_json_type(item)}")
        extra = sorted(set(item) - {"key", "size"})
        if extra:
            raise CopyRequestError(where, f"unknown field(s) {preview(extra)}")
        key = _string(item.get("key"), f"{where}.key")
        size = item.get("size")
        if isinstance(size, bool) or not isinstance(size, int):
            raise CopyRequestError(f"{where}.size", f"must be an integer, got {_json_type(size)}")
        # Bounded by digits before any comparison or conversion elsewhere: a Python int of
        # thousands of digits is valid JSON and would reach str() and arithmetic otherwise.
        if size.bit_length() > 63:
            raise CopyRequestError(f"{where}.size", f"{_json_type(size)} of "
                                   f"{size.bit_length()} bits is outside 0..{MAX_OBJECT_SIZE}")
        if not 0 <= size <= MAX_OBJECT_SIZE:
            raise CopyRequestError(f"{where}.size", f"{size} is outside 0..{MAX_OBJECT_SIZE}")
        if not key.startswith(source.prefix) or key == source.prefix:
            raise CopyRequestError(f"{where}.key", f"{_preview(key)} is not inside the source "
                                                   f"prefix {preview(source.prefix)}")
        if key.endswith("/"):
            raise CopyRequestError(f"{where}.key", "names a directory marker, not an object")
        check_key(key, f"{where}.key")
        if key in seen:
            raise CopyRequestError(f"{where}.key", f"{_preview(key)} is listed twice")
        seen.add(key)
        entries.append(CopyListingEntry(key=key, size=size))
    return tuple(entries)


def _request_id(value: Any) -> str:
    text = _string(value, "request_id")
    if not REQUEST_ID.fullmatch(text):
        raise CopyRequestError("request_id", f"{_preview(text)} is not valid: use 1-80 letters, "
                                             "digits, '_', '.' or '-', starting with a letter "
                                             "or digit")
    return text


def _mode(value: Any) -> CopyMode:
    text = _string(value, "mode")
    try:
        return CopyMode(text)
    except ValueError:
        raise CopyRequestError("mode", f"{_preview(text)} is not one of "
                                       f"{[str(m) for m in CopyMode]}") from None


def _notify(value: Any) -> str:
    text = _string(value, "notify")
    if not SNS_TOPIC_ARN.fullmatch(text):
        raise CopyRequestError("notify", f"{_preview(text)} is not an SNS topic ARN")
    return text


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise CopyRequestError(field, f"must be a string, got {_json_type(value)}")
    if not value:
        raise CopyRequestError(field, "must not be empty")
    return value


def _field_name(key: str) -> str:
    """A key of the request as the field a rejection names: cut short, it is untrusted."""
    return key if len(key) <= 64 else key[:64] + "..."


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _preview(text: str, limit: int = 80) -> str:
    """repr() of a value for an error message, cut short: errors end up in logs and tables."""
    return repr(text if len(text) <= limit else text[:limit] + "...")
