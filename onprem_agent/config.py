"""The agent's configuration: one TOML file (`agent.toml`), read once into a frozen AgentConfig.

Every section the shipping pipeline uses is typed and checked here. Sections owned by other
components ("hdfs", "kerberos", "inotify", "lease", "metrics", "verify", "copy", "sync",
"audit", "fsimage") are handed out raw by `AgentConfig.section(name)`; each component validates its own.
Anything else is an error, so a typo never silently falls back to a default.

Credentials, region and endpoint are deliberately not configurable here: boto3 reads them from
the standard chain (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, instance
roles), and a secret in a file or on a command line is how keys leak.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hdfs_events.envelope import SQS_BILLING_CHUNK_BYTES, SQS_MAX_MESSAGE_BYTES
from hdfs_events.ids import validate_cluster_name, validate_group_strategy

# Sections other components validate themselves.
FOREIGN_SECTIONS = ("hdfs", "kerberos", "inotify", "lease", "metrics", "verify", "copy", "sync",
                    "audit", "fsimage")
CHECKPOINT_STORES = ("file", "dynamodb")
RETRY_MODES = ("standard", "adaptive")
# Keys refused anywhere in the file (any section, any depth), by exact name or by these parts.
_SECRET_KEY = re.compile(
    r"(^|_)(secret|password|passwd|token|credentials?)($|_)|access_key|secret_key|session_token"
)
# Connection settings that belong to the AWS chain, not to this file.
_AWS_CHAIN_KEYS = frozenset({"region", "region_name", "endpoint", "endpoint_url", "profile",
                             "aws_profile", "aws_region"})


class ConfigError(ValueError):
    """A configuration mistake; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class SqsConfig:
    queue_url: str


@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    store: str = "file"
    path: Path | None = None  # store = "file"
    table: str | None = None  # store = "dynamodb": the agent-state table
    interval_ms: int = 1000


@dataclass(frozen=True, slots=True)
class FilterConfig:
    cover_dirs: tuple[str, ...] = ()
    ignore_patterns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackingConfig:
    group_by: str = "prefix:2"
    max_message_bytes: int = SQS_BILLING_CHUNK_BYTES
    linger_ms: int = 200
    # A replay has no freshness to protect but must keep its checkpoint moving: a longer linger
    # fills messages at backfill rates while a quiet group still holds T back by seconds only.
    replay_linger_ms: int = 2000
    compress: bool = True
    compression_level: int = 3


@dataclass(frozen=True, slots=True)
class SendingConfig:
    max_in_flight_batches: int = 4
    retry_mode: str = "adaptive"
    max_attempts: int = 5
    max_backoff_ms: int = 20_000
    shutdown_timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class ProgressConfig:
    interval_ms: int = 10_000  # plain log lines; a terminal line refreshes every 0.5 s


@dataclass(frozen=True, slots=True)
class AgentConfig:
    cluster: str
    path: Path
    sqs: SqsConfig
    checkpoint: CheckpointConfig
    filter: FilterConfig = field(default_factory=FilterConfig)
    packing: PackingConfig = field(default_factory=PackingConfig)
    sending: SendingConfig = field(default_factory=SendingConfig)
    progress: ProgressConfig = field(default_factory=ProgressConfig)
    raw_sections: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({}))

    def section(self, name: str) -> Mapping[str, Any]:
        """The raw table of a section another component owns ({} when absent)."""
        if name not in FOREIGN_SECTIONS:
            raise KeyError(f"[{name}] is not a section handed out raw; use {FOREIGN_SECTIONS}")
        return self.raw_sections.get(name, MappingProxyType({}))


def load_config(path: Path, overrides: Mapping[str, object] | None = None) -> AgentConfig:
    """Reads and checks `path`; `overrides` ("cluster", "sqs.queue_url", "packing.group_by",
    ...) replace file values, as command-line flags do. None values in overrides are ignored.

    Raises ConfigError naming the file and the key.
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(doc, path, overrides)


def parse_config(doc: Mapping[str, Any], path: Path,
                 overrides: Mapping[str, object] | None = None) -> AgentConfig:
    r = _Reader(path, _apply_overrides(doc, overrides or {}, path))
    r.refuse_secrets(r.doc, "")
    known = {"cluster", "sqs", "checkpoint", "filter", "packing", "sending", "progress",
             *FOREIGN_SECTIONS}
    for key in r.doc:
        if key not in known:
            raise r.error(_where(key), f"unknown {'section' if isinstance(r.doc[key], dict) else 'key'}"
                          f"; known: {', '.join(sorted(known))}")
    cluster = r.value("", "cluster", str)
    try:
        validate_cluster_name(cluster)
    except ValueError as exc:
        raise r.error("cluster", str(exc)) from None
    config = AgentConfig(
        cluster=cluster,
        path=path,
        sqs=_sqs(r),
        checkpoint=_checkpoint(r),
        filter=_filter(r),
        packing=_packing(r),
        sending=_sending(r),
        progress=ProgressConfig(**r.table("progress", {"interval_ms": (int, 100, None)})),
        raw_sections=MappingProxyType({
            name: MappingProxyType(r.section(name)) for name in FOREIGN_SECTIONS
            if name in r.doc
        }),
    )
    return config


def _sqs(r: _Reader) -> SqsConfig:
    values = r.table("sqs", {"queue_url": (str, None, None)})
    url = values.get("queue_url")
    if not url:
        raise r.error("[sqs] queue_url", "required (the URL of the FIFO queue)")
    if not url.endswith(".fifo"):
        raise r.error("[sqs] queue_url", f"{url!r} is not a FIFO queue (name must end in .fifo)")
    return SqsConfig(queue_url=url)


def _checkpoint(r: _Reader) -> CheckpointConfig:
    values = r.table("checkpoint", {"store": (str, None, None), "path": (str, None, None),
                                    "table": (str, None, None),
                                    "interval_ms": (int, 10, 1000)})
    store = values.pop("store", "file")
    if store not in CHECKPOINT_STORES:
        raise r.error("[checkpoint] store", f"{store!r} is not one of {CHECKPOINT_STORES}")
    if store == "file":
        if not values.get("path"):
            raise r.error("[checkpoint] path", 'required when store = "file"')
        raw = Path(values.pop("path")).expanduser()
        # Relative to the config file, so the agent works from any current directory.
        values["path"] = raw if raw.is_absolute() else (r.path.parent / raw)
    elif not values.get("table"):
        raise r.error("[checkpoint] table", 'required when store = "dynamodb"')
    return CheckpointConfig(store=store, **values)


def _filter(r: _Reader) -> FilterConfig:
    values = r.table("filter", {"cover_dirs": (list, None, None),
                                "ignore_patterns": (list, None, None)})
    dirs = tuple(values.get("cover_dirs", ()))
    for d in dirs:
        if not isinstance(d, str) or not d.startswith("/"):
            raise r.error("[filter] cover_dirs", f"{d!r} is not an absolute HDFS path")
    patterns = tuple(values.get("ignore_patterns", ()))
    for p in patterns:
        if not isinstance(p, str):
            raise r.error("[filter] ignore_patterns", f"{p!r} is not a string")
        try:
            re.compile(p)
        except re.error as exc:
            raise r.error("[filter] ignore_patterns", f"{p!r} is not a valid regex: {exc}") from None
    return FilterConfig(cover_dirs=dirs, ignore_patterns=patterns)


def _packing(r: _Reader) -> PackingConfig:
    values = r.table("packing", {
        "group_by": (str, None, None),
        # Below ~1 KiB a single typical event no longer fits a message.
        "max_message_bytes": (int, 1024, SQS_MAX_MESSAGE_BYTES),
        "linger_ms": (int, 0, 60_000),
        "replay_linger_ms": (int, 0, 600_000),
        "compress": (bool, None, None),
        "compression_level": (int, 1, 9),
    })
    if "group_by" in values:
        try:
            validate_group_strategy(values["group_by"])
        except ValueError as exc:
            raise r.error("[packing] group_by", str(exc)) from None
    return PackingConfig(**values)


def _sending(r: _Reader) -> SendingConfig:
    values = r.table("sending", {
        "max_in_flight_batches": (int, 1, 64),
        "retry_mode": (str, None, None),
        "max_attempts": (int, 1, 20),
        "max_backoff_ms": (int, 10, 600_000),
        "shutdown_timeout_ms": (int, 0, 3_600_000),
    })
    if values.get("retry_mode", "adaptive") not in RETRY_MODES:
        raise r.error("[sending] retry_mode", f"{values['retry_mode']!r} is not one of {RETRY_MODES}")
    return SendingConfig(**values)


class _Reader:
    """Typed access to the parsed TOML with errors that name the file and the key."""

    def __init__(self, path: Path, doc: Mapping[str, Any]) -> None:
        self.path, self.doc = path, doc

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path.name}: {key}: {message}" if key
                           else f"{self.path.name}: {message}")

    def section(self, name: str) -> dict[str, Any]:
        value = self.doc.get(name, {})
        if not isinstance(value, dict):
            raise self.error(f"[{name}]", "must be a table")
        return value

    def value(self, section: str, key: str, typ: type) -> Any:
        table = self.section(section) if section else self.doc
        if key not in table:
            raise self.error(_where(key, section), "required")
        return self._typed(table[key], typ, _where(key, section))

    def table(self, name: str, spec: Mapping[str, tuple[type, int | None, int | None]]
              ) -> dict[str, Any]:
        """The keys of [name] checked against `spec` (type, min, max); unknown keys are errors."""
        table = self.section(name)
        out: dict[str, Any] = {}
        for key, value in table.items():
            if key not in spec:
                raise self.error(_where(key, name),
                                 f"unknown key; known: {', '.join(spec)}")
            typ, low, high = spec[key]
            where = _where(key, name)
            value = self._typed(value, typ, where)
            if typ is int and low is not None and value < low:
                raise self.error(where, f"must be >= {low}")
            if typ is int and high is not None and value > high:
                raise self.error(where, f"must be <= {high}")
            out[key] = value
        return out

    def _typed(self, value: Any, typ: type, where: str) -> Any:
        # TOML booleans are not integers here, whatever Python's bool subclassing says.
        ok = isinstance(value, typ) and not (typ is int and isinstance(value, bool))
        if not ok:
            raise self.error(where, f"must be {_TYPE_NAMES.get(typ, typ.__name__)}, "
                                    f"got {value!r}")
        return value

    def refuse_secrets(self, table: Mapping[str, Any], prefix: str) -> None:
        for key, value in table.items():
            where = _where(key, prefix)
            lowered = key.lower()
            if _SECRET_KEY.search(lowered):
                raise self.error(where, "secrets are never read from the config file; use the "
                                        "standard AWS credential chain (AWS_PROFILE, instance "
                                        "or SSO roles, environment variables)")
            if lowered in _AWS_CHAIN_KEYS:
                raise self.error(where, "region, endpoint and profile come from the standard "
                                        "AWS chain (AWS_REGION, AWS_ENDPOINT_URL, "
                                        "AWS_ENDPOINT_URL_SQS, AWS_PROFILE), not from this file")
            if isinstance(value, dict):
                self.refuse_secrets(value, f"{prefix}.{key}" if prefix else key)


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}


def _where(key: str, section: str = "") -> str:
    return f"[{section}] {key}" if section else key


def _apply_overrides(doc: Mapping[str, Any], overrides: Mapping[str, object],
                     path: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in doc.items()}
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.rpartition(".")
        if section:
            table = merged.setdefault(section, {})
            if not isinstance(table, dict):
                raise ConfigError(f"{path.name}: [{section}]: must be a table")
            table[key] = value
        else:
            merged[key] = value
    return merged
