"""The copy worker's settings: the [copy] table of the agent config, checked once at start.

Every error names the key and the file, so an operator fixes the config without reading code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdfs_events.copy_request import (
    SNS_TOPIC_ARN,
    CopyRequestError,
    S3Location,
    parse_s3_uri,
    validate_hdfs_path,
)
from onprem_agent.config import ConfigError, load_config

# SQS allows a visibility timeout of 0 s to 12 hours (43,200 s).
SQS_MAX_VISIBILITY_S = 43_200
# SQS long polling waits at most 20 s per ReceiveMessage.
SQS_MAX_WAIT_S = 20
# Command-line words that would put a credential on the distcp command line, where `ps` and the
# YARN job configuration show it to everyone. S3A reads credentials from the environment or a
# Hadoop credential provider (hadoop.security.credential.provider.path) instead.
_SECRET_WORDS = ("secret", "password", "session.token", "access.key", "credential")


class SettingsError(ValueError):
    """A [copy] setting that is missing or wrong; the message names the key and the file."""


@dataclass(frozen=True, slots=True)
class CopySettings:
    cluster: str  # the agent config's `cluster`: its transfers items are "<cluster>#<request>"
    queue_url: str
    transfers_table: str
    allowed_sources: tuple[S3Location, ...]
    allowed_destinations: tuple[str, ...]
    notify_topic_arn: str | None = None
    allowed_notify_topics: tuple[str, ...] = ()
    distcp_command: tuple[str, ...] = ("hadoop", "distcp")
    list_command: tuple[str, ...] = ("hadoop", "fs", "-ls", "-R")
    remove_command: tuple[str, ...] = ("hadoop", "fs", "-rm", "-f", "-skipTrash")
    max_concurrent: int = 2
    visibility_timeout_s: int = 300
    heartbeat_s: int = 60
    max_attempts: int = 5
    retry_base_s: int = 30
    retry_max_s: int = 3600
    copy_timeout_s: int = 6 * 3600
    poll_wait_s: int = SQS_MAX_WAIT_S
    max_objects: int = 100_000
    max_bytes: int = 10 * 1024**4
    retention_days: int = 90


_INT_KEYS: dict[str, tuple[int, int]] = {  # key -> (min, max)
    "max_concurrent": (1, 64),
    "visibility_timeout_s": (1, SQS_MAX_VISIBILITY_S),
    "heartbeat_s": (1, SQS_MAX_VISIBILITY_S),
    "max_attempts": (1, 1000),
    "retry_base_s": (0, SQS_MAX_VISIBILITY_S),
    "retry_max_s": (0, SQS_MAX_VISIBILITY_S),
    # ChangeMessageVisibility cannot extend a message past 12 hours from its receipt.
    "copy_timeout_s": (1, SQS_MAX_VISIBILITY_S),
    "poll_wait_s": (0, SQS_MAX_WAIT_S),
    "max_objects": (1, 10_000_000),
    "max_bytes": (1, 2**62),
    "retention_days": (1, 3650),
}
_STR_KEYS = ("queue_url", "transfers_table", "notify_topic_arn")
_LIST_KEYS = ("allowed_sources", "allowed_destinations", "allowed_notify_topics",
              "distcp_command", "list_command", "remove_command")
KNOWN_KEYS = frozenset((*_INT_KEYS, *_STR_KEYS, *_LIST_KEYS))


def parse_copy_settings(table: Mapping[str, Any], source: str, *,
                        cluster: str) -> CopySettings:
    """Checks the raw [copy] table read from `source` (a file name, for messages); `cluster`
    is the config's own (checked by onprem_agent.config)."""
    def err(key: str, message: str) -> SettingsError:
        return SettingsError(f"{source}: [copy] {key}: {message}")

    if not isinstance(table, Mapping):
        raise SettingsError(f"{source}: [copy] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise err(unknown[0], f"unknown key (known: {', '.join(sorted(KNOWN_KEYS))})")
    kw: dict[str, Any] = {"cluster": cluster}
    for key in ("queue_url", "transfers_table"):
        if key not in table:
            raise err(key, "is required")
    for key in _STR_KEYS:
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value:
                raise err(key, f"must be a non-empty string, got {value!r}")
            kw[key] = value
    if "notify_topic_arn" in kw and not SNS_TOPIC_ARN.fullmatch(kw["notify_topic_arn"]):
        raise err("notify_topic_arn", f"{kw['notify_topic_arn']!r} is not an SNS topic ARN")
    for key, (low, high) in _INT_KEYS.items():
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise err(key, f"must be a whole number in {low}..{high}, got {value!r}")
            kw[key] = value
    lists = {key: _string_list(table, key, err) for key in _LIST_KEYS if key in table}

    if not lists.get("allowed_sources"):
        raise err("allowed_sources", "is required: list the s3://bucket/prefix/ the worker "
                                     "may read")
    if not lists.get("allowed_destinations"):
        raise err("allowed_destinations", "is required: list the HDFS directories the worker "
                                          "may write below")
    sources = []
    for uri in lists["allowed_sources"]:
        try:
            sources.append(parse_s3_uri(uri, "allowed_sources"))
        except CopyRequestError as exc:
            raise err("allowed_sources", f"{uri!r}: {exc.reason}") from None
    kw["allowed_sources"] = tuple(sources)
    destinations = []
    for path in lists["allowed_destinations"]:
        try:
            destinations.append(validate_hdfs_path(path, "allowed_destinations"))
        except CopyRequestError as exc:
            raise err("allowed_destinations", f"{path!r}: {exc.reason}") from None
    kw["allowed_destinations"] = tuple(destinations)
    topics = lists.get("allowed_notify_topics", [])
    for arn in topics:
        if not SNS_TOPIC_ARN.fullmatch(arn):
            raise err("allowed_notify_topics", f"{arn!r} is not an SNS topic ARN")
    kw["allowed_notify_topics"] = tuple(topics)
    for key in ("distcp_command", "list_command", "remove_command"):
        if key in lists:
            words = lists[key]
            if not words:
                raise err(key, "must name a program, e.g. [\"hadoop\", \"distcp\"]")
            for word in words:
                if any(s in word.lower() for s in _SECRET_WORDS):
                    raise err(key, f"{word!r} looks like a credential; S3A credentials come "
                                   "from the environment or a Hadoop credential provider, "
                                   "never the command line")
            kw[key] = tuple(words)

    settings = CopySettings(**kw)
    # The heartbeat must renew before the message reappears; a third of the timeout leaves two
    # chances for a slow SQS call.
    if settings.heartbeat_s * 3 > settings.visibility_timeout_s:
        raise err("heartbeat_s", f"{settings.heartbeat_s} s is more than a third of "
                                 f"visibility_timeout_s ({settings.visibility_timeout_s} s)")
    if settings.retry_base_s > settings.retry_max_s:
        raise err("retry_base_s", "is larger than retry_max_s")
    return settings


def load_copy_settings(path: str | Path) -> CopySettings:
    """Reads the [copy] section of the agent config at `path` (one config for the agent)."""
    path = Path(path)
    try:
        config = load_config(path, {})
    except ConfigError as exc:
        raise SettingsError(str(exc)) from None
    table = config.section("copy")
    if not table:
        raise SettingsError(f"{path}: no [copy] section")
    return parse_copy_settings(table, str(path), cluster=config.cluster)


def _string_list(table: Mapping[str, Any], key: str, err: Any) -> list[str]:
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise err(key, f"must be a list of non-empty strings, got {value!r}")
    return list(value)

