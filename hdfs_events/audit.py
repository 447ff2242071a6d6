"""The NameNode's audit log as records: one line of log4j logger
`org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit` in, one `AuditRecord` out.

Hadoop 3.3.4's FSNamesystem.FSNamesystemAuditLogger (dfs.namenode.audit.loggers=default) writes
the message as tab-separated key=value pairs, always in this order:

    allowed=true  ugi=alice (auth:KERBEROS)  ip=/10.0.0.1  cmd=create  src=/a  dst=null
    perm=alice:supergroup:rw-r--r--  [trackingId=...]  proto=rpc  [callerContext=...]

src and dst pass through commons-text `escapeJava` (a tab in a name is `\\t`, non-ASCII is
`\\uXXXX`), so only the separators are real tabs. What comes before `allowed=` is the operator's
log4j ConversionPattern (Hadoop's own: `%d{ISO8601} %p %c{2}: %m%n`); the time is read from its
first tokens with a strptime format.

A line that does not parse is still a record (`raw` and `reason` set, the rest null): it is
shipped with the others and quarantined by the compaction, never dropped or retried.

Every record carries its identity: (cluster, host, file_id, offset). `file_id` survives log4j's
rotation (the file keeps its inode and first bytes when renamed to .1), so a line read twice after
a crash has the same identity both times, and the compaction dedups on it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

# Hadoop's default log4j layout writes %d{ISO8601}: "2026-11-26 12:28:14,123".
DEFAULT_TIME_FORMAT = "%Y-%m-%d %H:%M:%S,%f"

# The keys the default audit logger writes (trackingId only with
# dfs.namenode.audit.log.token.tracking.id, callerContext only with hadoop.caller.context.enabled).
AUDIT_KEYS = ("allowed", "ugi", "ip", "cmd", "src", "dst", "perm", "trackingId", "proto",
              "callerContext")
_REQUIRED_KEYS = ("allowed", "ugi", "ip", "cmd", "src")

# The commands FSNamesystem (3.3.4) audits that change the namespace or a file's metadata: the
# ones an inotify event can be matched to, and the ones a security review asks "who did it" of.
# Everything else it audits is a read (open, listStatus, getfileinfo, contentSummary, ...) or an
# administrative query.
MUTATING_COMMANDS = frozenset({
    "create", "createWithEC", "mkdirs", "rename", "delete", "append", "truncate", "concat",
    "createSymlink", "setPermission", "setOwner", "setReplication", "setTimes", "setXAttr",
    "removeXAttr", "setAcl", "modifyAclEntries", "removeAclEntries", "removeDefaultAcl",
    "removeAcl", "setStoragePolicy", "unsetStoragePolicy", "satisfyStoragePolicy", "setQuota",
    "clearQuota", "setSpaceQuota", "clearSpaceQuota", "createSnapshot", "deleteSnapshot",
    "renameSnapshot", "allowSnapshot", "disallowSnapshot", "setErasureCodingPolicy",
    "unsetErasureCodingPolicy", "createEncryptionZone", "recoverLease",
})

_UGI = re.compile(r"(?P<user>.+?) \(auth:(?P<auth>[A-Za-z_]+)\)"
                  r"(?: via (?P<real_user>.+?) \(auth:(?P<real_auth>[A-Za-z_]+)\))?")
# FSNamesystem.renameTo with Options.Rename logs "rename (options=[OVERWRITE])".
_CMD = re.compile(r"(?P<cmd>[A-Za-z]+)(?: \(options=(?P<options>.*)\))?")
_ISO8601 = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3})")
_JAVA_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "\\": "\\",
                   '"': '"', "'": "'", "/": "/"}


@dataclass(frozen=True, slots=True)
class LineSource:
    """Where a line was read: the NameNode host, the log file's identity, the line's first byte."""
    host: str
    file_id: str
    offset: int


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit line. `reason` is None for a parsed line; else only the identity, `raw` and
    `reason` are set. `time` is epoch milliseconds, UTC."""
    cluster: str
    host: str
    file_id: str
    offset: int
    time: int | None = None
    allowed: bool | None = None
    user: str | None = None  # the effective user, as the NameNode names it (a proxy user's target)
    auth: str | None = None  # KERBEROS, SIMPLE, TOKEN, PROXY, ...
    real_user: str | None = None  # who impersonated `user` ("alice (auth:PROXY) via oozie ...")
    real_auth: str | None = None
    ip: str | None = None
    cmd: str | None = None
    options: str | None = None  # rename's Options.Rename list, e.g. "[OVERWRITE]"
    src: str | None = None
    dst: str | None = None
    perm: str | None = None  # owner:group:permission of the result, when the command returns one
    proto: str | None = None  # rpc | webhdfs
    caller_context: str | None = None
    raw: str | None = None
    reason: str | None = None

    @property
    def identity(self) -> tuple[str, str, str, int]:
        return (self.cluster, self.host, self.file_id, self.offset)

    def to_json(self) -> dict[str, Any]:
        """The record as one JSON line holds it: every field, nulls included, so every object
        has the one schema the Spark join reads."""
        return asdict(self)


# Field names in JSON order, for readers that build a schema.
RECORD_FIELDS = tuple(AuditRecord.__dataclass_fields__)


class AuditLineError(ValueError):
    """A line the parser cannot read; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class TimeFormat:
    """How the log4j pattern writes the time: a strptime format and the zone the NameNode's JVM
    logs in (log4j formats %d in the JVM's default zone and writes no offset)."""
    strptime: str = DEFAULT_TIME_FORMAT
    zone: tzinfo = UTC
    # How many space-separated tokens the time takes at the start of a line.
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        sample = datetime(2001, 2, 3, 4, 5, 6, 7000).strftime(self.strptime)
        object.__setattr__(self, "tokens", len(sample.split()))

    def parse(self, text: str) -> datetime:
        """The naive local time of `text` (ValueError when it does not match)."""
        if self.strptime == DEFAULT_TIME_FORMAT:
            # strptime is most of a line's parsing cost; the default layout is fixed-width.
            m = _ISO8601.fullmatch(text)
            if m is None:
                raise ValueError(text)
            return datetime(*(int(g) for g in m.groups()[:6]), int(m.group(7)) * 1000)
        return datetime.strptime(text, self.strptime)


def parse_line(line: str, cluster: str, source: LineSource,
               time_format: TimeFormat = TimeFormat()) -> AuditRecord:
    """A record for one line (no newline); an unparseable line gives a record with a reason."""
    try:
        fields = _parse(line, time_format)
    except AuditLineError as exc:
        return AuditRecord(cluster=cluster, host=source.host, file_id=source.file_id,
                           offset=source.offset, raw=line, reason=str(exc))
    return AuditRecord(cluster=cluster, host=source.host, file_id=source.file_id,
                       offset=source.offset, **fields)


def _parse(line: str, time_format: TimeFormat) -> dict[str, Any]:
    start = line.find("allowed=")
    if start < 0:
        raise AuditLineError("allowed: missing (the default audit logger's message starts "
                             "with allowed=)")
    pairs = _pairs(line[start:])
    for key in _REQUIRED_KEYS:
        if key not in pairs:
            raise AuditLineError(f"{key}: missing (the default audit logger writes "
                                 f"{', '.join(_REQUIRED_KEYS)} on every line)")
    allowed = pairs["allowed"]
    if allowed not in ("true", "false"):
        raise AuditLineError(f"allowed: {allowed!r} is not true or false")
    ugi = _UGI.fullmatch(pairs["ugi"])
    if ugi is None:
        raise AuditLineError(f"ugi: {pairs['ugi']!r} is not 'user (auth:METHOD)' "
                             "[' via user (auth:METHOD)']")
    cmd = _CMD.fullmatch(pairs["cmd"])
    if cmd is None:
        raise AuditLineError(f"cmd: {pairs['cmd']!r} is not a command name")
    return {
        "time": _time(line[:start], time_format),
        "allowed": allowed == "true",
        "user": ugi["user"], "auth": ugi["auth"],
        "real_user": ugi["real_user"], "real_auth": ugi["real_auth"],
        "ip": _ip(pairs["ip"]),
        "cmd": cmd["cmd"], "options": cmd["options"],
        "src": _path("src", pairs["src"]), "dst": _path("dst", pairs.get("dst", "null")),
        "perm": _null(pairs.get("perm")), "proto": _null(pairs.get("proto")),
        "caller_context": _null(pairs.get("callerContext")),
    }


def _pairs(message: str) -> dict[str, str]:
    """key -> value. A piece that does not start with a known key belongs to the value before
    it: the caller context is not escaped and may hold a tab."""
    pairs: dict[str, str] = {}
    last: str | None = None
    for piece in message.split("\t"):
        key, eq, value = piece.partition("=")
        if eq and key in AUDIT_KEYS and key not in pairs:
            pairs[key], last = value, key
        elif last is not None:
            pairs[last] += "\t" + piece
    return pairs


def _time(prefix: str, time_format: TimeFormat) -> int:
    text = " ".join(prefix.split()[:time_format.tokens])
    try:
        naive = time_format.parse(text)
    except ValueError:
        raise AuditLineError(f"time: {text!r} does not match the time format "
                             f"{time_format.strptime!r}") from None
    local = naive.replace(tzinfo=time_format.zone)
    return int(local.timestamp() * 1000)


def _ip(value: str) -> str | None:
    # InetAddress.toString(): "/10.0.0.1", or "host/10.0.0.1" when the name was resolved.
    return None if value == "null" else value.rpartition("/")[2]


def _path(field: str, value: str) -> str | None:
    if value == "null":
        return None
    if "\\" not in value:
        return value
    try:
        units = _JAVA_ESCAPE.sub(_unescape, value)
        # \uXXXX pairs are UTF-16 surrogates for characters past the BMP.
        return units.encode("utf-16", "surrogatepass").decode("utf-16")
    except (KeyError, UnicodeError):
        raise AuditLineError(f"{field}: {value!r} is not a Java-escaped string") from None


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code[1:], 16)) if code[0] == "u" and len(code) == 5 else _SIMPLE_ESCAPES[code]


def _null(value: str | None) -> str | None:
    return None if value is None or value == "null" else value
