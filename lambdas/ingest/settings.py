"""The consumer's settings, read once from the environment the CDK stack sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from hdfs_events import names


class SettingsError(ValueError):
    """A missing or invalid environment variable; the message names it."""


@dataclass(frozen=True, slots=True)
class Settings:
    lake_bucket: str
    index_table: str | None
    index_prefixes: tuple[str, ...]
    log_mode: str
    event_queue_url: str | None

    @property
    def index_enabled(self) -> bool:
        return bool(self.index_table and self.index_prefixes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
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
        return cls(
            lake_bucket=bucket,
            index_table=table,
            index_prefixes=prefixes,
            log_mode=log_mode,
            event_queue_url=env.get(names.ENV_EVENT_QUEUE_URL, "").strip() or None,
        )


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
