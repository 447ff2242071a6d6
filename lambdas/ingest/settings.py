"""The consumer's settings, read once from the environment the CDK stack sets."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from hdfs_events import names
from hdfs_events.ids import CLUSTER_NAME
from lambdas.ingest.senders import is_sender_entry


class SettingsError(ValueError):
    """A missing or invalid environment variable; the message names it."""


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    lake_bucket: str
    index_table: str | None
    index_prefixes: tuple[str, ...]
    log_mode: str
    apply_queue_url: str | None  # where continue requests go; set whenever the index is
    cluster_senders: Mapping[str, tuple[str, ...]]  # lambdas/ingest/senders.py

    @property
    def index_enabled(self) -> bool:
        return bool(self.index_table and self.index_prefixes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConsumerSettings:
        env = os.environ if environ is None else environ
        bucket = env.get(names.ENV_LAKE_BUCKET, "").strip()
        if not bucket:
            raise SettingsError(f"environment variable {names.ENV_LAKE_BUCKET} is not set")
        log_mode = env.get(names.ENV_LOG_MODE, "all").strip() or "all"
        if log_mode not in names.LOG_MODES:
            raise SettingsError(
                f"environment variable {names.ENV_LOG_MODE}={log_mode!r} is not one of "
                f"{', '.join(names.LOG_MODES)}"
            )
        prefixes = parse_prefixes(env.get(names.ENV_INDEX_PREFIXES, ""))
        table = env.get(names.ENV_INDEX_TABLE, "").strip() or None
        if prefixes and table is None:
            raise SettingsError(
                f"{names.ENV_INDEX_PREFIXES} is set but {names.ENV_INDEX_TABLE} is not"
            )
        apply_queue = env.get(names.ENV_APPLY_QUEUE_URL, "").strip() or None
        if prefixes and apply_queue is None:
            # Only invocations of the apply queue apply ranges: without it the index never moves.
            raise SettingsError(
                f"{names.ENV_INDEX_PREFIXES} is set but {names.ENV_APPLY_QUEUE_URL} is not"
            )
        return cls(
            lake_bucket=bucket,
            index_table=table,
            index_prefixes=prefixes,
            log_mode=log_mode,
            apply_queue_url=apply_queue,
            cluster_senders=parse_cluster_senders(env.get(names.ENV_CLUSTER_SENDERS, "")),
        )


def parse_cluster_senders(text: str) -> dict[str, tuple[str, ...]]:
    """{"prod": ["arn:aws:iam::123456789012:user/x", "AROA..."]}: every cluster the consumer
    accepts, each with at least one principal."""
    where = f"environment variable {names.ENV_CLUSTER_SENDERS}"
    if not text.strip():
        raise SettingsError(f"{where} is not set: no cluster's events could be accepted")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{where} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not doc:
        raise SettingsError(f"{where} must be a JSON object of cluster names to principals")
    senders: dict[str, tuple[str, ...]] = {}
    for cluster, entries in doc.items():
        if not CLUSTER_NAME.fullmatch(cluster):
            raise SettingsError(f"{where}: {cluster!r} is not a cluster name")
        if (not isinstance(entries, list) or not entries
                or not all(isinstance(e, str) and is_sender_entry(e) for e in entries)):
            raise SettingsError(f"{where}: cluster {cluster!r} needs a list of IAM user ARNs "
                                f"or IAM unique ids (AIDA..., AROA...), got {entries!r}")
        senders[cluster] = tuple(entries)
    return senders


def parse_prefixes(text: str) -> tuple[str, ...]:
    """"/data, /user/" -> ("/data", "/user"); each must be absolute."""
    prefixes = []
    for raw in text.split(","):
        prefix = raw.strip()
        if not prefix:
            continue
        if not prefix.startswith("/"):
            raise SettingsError(
                f"{names.ENV_INDEX_PREFIXES}: {prefix!r} is not an absolute HDFS path"
            )
        prefixes.append(prefix.rstrip("/") or "/")
    return tuple(dict.fromkeys(prefixes))


def is_under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(p == "/" or path == p or path.startswith(p + "/") for p in prefixes)
