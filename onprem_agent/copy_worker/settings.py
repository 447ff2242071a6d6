"""The copy worker's settings: the [copy] table of the agent config, checked once at start.

Every error names the key and the file, so an operator fixes the config without reading code.
"""

from __future__ import annotations

from dataclasses import dataclass

from hdfs_events.copy_request import (
    SNS_TOPIC_ARN,
    CopyRequestError,
    S3Location,
    parse_s3_uri,
    validate_hdfs_path,
)
from onprem_agent.agent_toml import Key, Section, Values
from onprem_agent.config import CLUSTER

# SQS allows a visibility timeout of 0 s to 12 hours (43,200 s).
SQS_MAX_VISIBILITY_S = 43_200
# SQS long polling waits at most 20 s per ReceiveMessage.
SQS_MAX_WAIT_S = 20
# Command-line words that would put a credential on the distcp command line, where `ps` and the
# YARN job configuration show it to everyone. S3A reads credentials from the environment or a
# Hadoop credential provider (hadoop.security.credential.provider.path) instead.
_SECRET_WORDS = ("secret", "password", "session.token", "access.key", "credential")


@dataclass(frozen=True, slots=True)
class CopySettings:
    cluster: str  # the agent config's `cluster`: its transfers items are "<cluster>#<request>"
    queue_url: str
    transfers_table: str
    allowed_sources: tuple[S3Location, ...]
    allowed_destinations: tuple[str, ...]
    notify_topic_arn: str | None
    allowed_notify_topics: tuple[str, ...]
    distcp_command: tuple[str, ...]
    list_command: tuple[str, ...]
    remove_command: tuple[str, ...]
    max_concurrent: int
    visibility_timeout_s: int
    heartbeat_s: int
    max_attempts: int
    retry_base_s: int
    retry_max_s: int
    copy_timeout_s: int
    poll_wait_s: int
    max_objects: int
    max_bytes: int
    retention_days: int


def _source(uri: str) -> S3Location:
    try:
        return parse_s3_uri(uri, "allowed_sources")
    except CopyRequestError as exc:
        raise ValueError(f"{uri!r}: {exc.reason}") from None


def _destination(path: str) -> str:
    try:
        return validate_hdfs_path(path, "allowed_destinations")
    except CopyRequestError as exc:
        raise ValueError(f"{path!r}: {exc.reason}") from None


def _topic(arn: str) -> str:
    if not SNS_TOPIC_ARN.fullmatch(arn):
        raise ValueError(f"{arn!r} is not an SNS topic ARN")
    return arn


def _command_word(word: str) -> str:
    if any(s in word.lower() for s in _SECRET_WORDS):
        raise ValueError(f"{word!r} looks like a credential; S3A credentials come from the "
                         "environment or a Hadoop credential provider, never the command line")
    return word


def _copy(v: Values) -> CopySettings:
    if not v["allowed_sources"]:
        raise v.error("allowed_sources", "required: list the s3://bucket/prefix/ the worker "
                                         "may read")
    if not v["allowed_destinations"]:
        raise v.error("allowed_destinations", "required: list the HDFS directories the worker "
                                              "may write below")
    for key in ("distcp_command", "list_command", "remove_command"):
        if not v[key]:
            raise v.error(key, "must name a program, e.g. [\"hadoop\", \"distcp\"]")
    # The heartbeat must renew before the message reappears; a third of the timeout leaves two
    # chances for a slow SQS call.
    if v["heartbeat_s"] * 3 > v["visibility_timeout_s"]:
        raise v.error("heartbeat_s", f"{v['heartbeat_s']} s is more than a third of "
                                     f"visibility_timeout_s ({v['visibility_timeout_s']} s)")
    if v["retry_base_s"] > v["retry_max_s"]:
        raise v.error("retry_base_s", "is larger than retry_max_s")
    return CopySettings(cluster=v.read(CLUSTER), **{key: v[key] for key in COPY.keys})


COPY = Section("copy", {
    "queue_url": Key(str, required="the copy-request queue"),
    "transfers_table": Key(str, required="the transfers table"),
    "notify_topic_arn": Key(str, parse=_topic),
    "allowed_sources": Key(list, (), parse=_source),
    "allowed_destinations": Key(list, (), parse=_destination),
    "allowed_notify_topics": Key(list, (), parse=_topic),
    "distcp_command": Key(list, ("hadoop", "distcp"), parse=_command_word),
    "list_command": Key(list, ("hadoop", "fs", "-ls", "-R"), parse=_command_word),
    "remove_command": Key(list, ("hadoop", "fs", "-rm", "-f", "-skipTrash"),
                          parse=_command_word),
    "max_concurrent": Key(int, 2, low=1, high=64),
    "visibility_timeout_s": Key(int, 300, low=1, high=SQS_MAX_VISIBILITY_S),
    "heartbeat_s": Key(int, 60, low=1, high=SQS_MAX_VISIBILITY_S),
    "max_attempts": Key(int, 5, low=1, high=1000),
    "retry_base_s": Key(int, 30, low=0, high=SQS_MAX_VISIBILITY_S),
    "retry_max_s": Key(int, 3600, low=0, high=SQS_MAX_VISIBILITY_S),
    # ChangeMessageVisibility cannot extend a message past 12 hours from its receipt.
    "copy_timeout_s": Key(int, 6 * 3600, low=1, high=SQS_MAX_VISIBILITY_S),
    "poll_wait_s": Key(int, SQS_MAX_WAIT_S, low=0, high=SQS_MAX_WAIT_S),
    "max_objects": Key(int, 100_000, low=1, high=10_000_000),
    "max_bytes": Key(int, 10 * 1024**4, low=1, high=2**62),
    "retention_days": Key(int, 90, low=1, high=3650),
}, build=_copy, absent="required for `copy-worker` (queue_url, transfers_table, allowed_sources "
                       "and allowed_destinations at least): no [copy] section in this file")
