"""The agent's configuration: one TOML file (`agent.toml`), read once into a frozen AgentConfig.

AgentConfig holds the sections every command that ships events uses, declared here: [sqs],
[checkpoint], [filter], [packing], [sending], [progress] and the top-level `cluster`. The other
sections are declared by their components (live/settings.py: [hdfs], [kerberos], [inotify],
[lease], [metrics], [verify]; sync/settings.py: [sync]; audit/settings.py: [audit];
copy_worker/settings.py: [copy]; image_fetch.py: [fsimage]) and read through
`AgentConfig.read(SECTION)`. A table not named in SECTIONS is an error, so a typo never silently
falls back to a default.

Credentials, region and endpoint are deliberately not configurable here: boto3 reads them from
the standard chain (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, instance
roles), and a secret in a file or on a command line is how keys leak (agent_toml refuses them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hdfs_events.envelope import SQS_BILLING_CHUNK_BYTES, SQS_MAX_MESSAGE_BYTES
from hdfs_events.ids import validate_cluster_name, validate_group_strategy
from onprem_agent.agent_toml import AgentToml, Key, Section, Values

T = TypeVar("T")

# Every table of agent.toml; each is declared by the Section of the same name.
SECTIONS = ("sqs", "checkpoint", "filter", "packing", "sending", "progress", "hdfs", "kerberos",
            "inotify", "lease", "metrics", "verify", "copy", "sync", "audit", "fsimage")
CHECKPOINT_STORES = ("file", "dynamodb")
RETRY_MODES = ("standard", "adaptive")


@dataclass(frozen=True, slots=True)
class SqsConfig:
    queue_url: str


@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    store: str
    path: Path | None  # store = "file"
    table: str | None  # store = "dynamodb": the agent-state table
    interval_ms: int


@dataclass(frozen=True, slots=True)
class FilterConfig:
    cover_dirs: tuple[str, ...]
    ignore_patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PackingConfig:
    group_by: str
    max_message_bytes: int
    linger_ms: int
    replay_linger_ms: int
    compress: bool
    compression_level: int


@dataclass(frozen=True, slots=True)
class SendingConfig:
    max_in_flight_batches: int
    retry_mode: str
    max_attempts: int
    max_backoff_ms: int
    shutdown_timeout_ms: int


@dataclass(frozen=True, slots=True)
class ProgressConfig:
    interval_ms: int  # plain log lines; a terminal line refreshes every 0.5 s


def _fifo_queue(url: str) -> str:
    if not url.endswith(".fifo"):
        raise ValueError(f"{url!r} is not a FIFO queue (name must end in .fifo)")
    return url


def _checkpoint(v: Values) -> CheckpointConfig:
    if v["store"] == "file" and v["path"] is None:
        raise v.error("path", 'required when store = "file"')
    if v["store"] == "dynamodb" and v["table"] is None:
        raise v.error("table", 'required when store = "dynamodb"')
    return CheckpointConfig(store=v["store"], path=v.path("path") if v["store"] == "file" else None,
                            table=v["table"], interval_ms=v["interval_ms"])


def hdfs_path(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute HDFS path")
    return path


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regex: {exc}") from None
    return pattern


CLUSTER = Section("", {"cluster": Key(str, required=True, parse=validate_cluster_name)},
                  build=lambda v: str(v["cluster"]))
SQS = Section("sqs", {
    "queue_url": Key(str, required="the URL of the FIFO queue", parse=_fifo_queue),
}, build=lambda v: SqsConfig(queue_url=v["queue_url"]))
CHECKPOINT = Section("checkpoint", {
    "store": Key(str, "file", one_of=CHECKPOINT_STORES),
    "path": Key(str),
    "table": Key(str),
    "interval_ms": Key(int, 1000, low=10, high=1000),
}, build=_checkpoint)
FILTER = Section("filter", {
    "cover_dirs": Key(list, (), parse=hdfs_path),
    "ignore_patterns": Key(list, (), parse=_regex),
}, build=lambda v: FilterConfig(cover_dirs=v["cover_dirs"], ignore_patterns=v["ignore_patterns"]))
PACKING = Section("packing", {
    "group_by": Key(str, "prefix:2", parse=validate_group_strategy),
    # Below ~1 KiB a single typical event no longer fits a message.
    "max_message_bytes": Key(int, SQS_BILLING_CHUNK_BYTES, low=1024, high=SQS_MAX_MESSAGE_BYTES),
    "linger_ms": Key(int, 200, low=0, high=60_000),
    # A replay has no freshness to protect but must keep its checkpoint moving: a longer linger
    # fills messages at backfill rates while a quiet group still holds T back by seconds only.
    "replay_linger_ms": Key(int, 2000, low=0, high=600_000),
    "compress": Key(bool, True),
    "compression_level": Key(int, 3, low=1, high=9),
}, build=lambda v: PackingConfig(**{key: v[key] for key in PACKING.keys}))
SENDING = Section("sending", {
    "max_in_flight_batches": Key(int, 4, low=1, high=64),
    "retry_mode": Key(str, "adaptive", one_of=RETRY_MODES),
    "max_attempts": Key(int, 5, low=1, high=20),
    "max_backoff_ms": Key(int, 20_000, low=10, high=600_000),
    "shutdown_timeout_ms": Key(int, 30_000, low=0, high=3_600_000),
}, build=lambda v: SendingConfig(**{key: v[key] for key in SENDING.keys}))
PROGRESS = Section("progress", {"interval_ms": Key(int, 10_000, low=100)},
                   build=lambda v: ProgressConfig(interval_ms=v["interval_ms"]))


@dataclass(frozen=True, slots=True)
class AgentConfig:
    cluster: str
    path: Path
    sqs: SqsConfig
    checkpoint: CheckpointConfig
    filter: FilterConfig
    packing: PackingConfig
    sending: SendingConfig
    progress: ProgressConfig
    toml: AgentToml = field(repr=False, compare=False)

    def read(self, section: Section[T]) -> T:
        """Another component's section of this file, checked against its declaration."""
        return self.toml.read(section)


def load_config(path: Path, overrides: Mapping[str, object] | None = None) -> AgentConfig:
    """Reads and checks `path`; `overrides` ("cluster", "sqs.queue_url", "packing.group_by",
    ...) replace file values, as command-line flags do. None values in overrides are ignored.

    Raises ConfigError naming the file and the key.
    """
    return _agent_config(AgentToml.load(Path(path), overrides))


def parse_config(doc: Mapping[str, Any], path: Path,
                 overrides: Mapping[str, object] | None = None) -> AgentConfig:
    """The same checks on a document already parsed (`path` names it in errors)."""
    return _agent_config(AgentToml(path, doc, overrides))


def _agent_config(toml: AgentToml) -> AgentConfig:
    toml.refuse_unknown_sections(SECTIONS, tuple(CLUSTER.keys))
    return AgentConfig(
        cluster=toml.read(CLUSTER), path=toml.path, sqs=toml.read(SQS),
        checkpoint=toml.read(CHECKPOINT), filter=toml.read(FILTER), packing=toml.read(PACKING),
        sending=toml.read(SENDING), progress=toml.read(PROGRESS), toml=toml)
