"""Per-environment settings, read once from `cdk.json` context into one typed object.

`cdk.json` holds `context.environments.<name>`: a mapping of the keys below (snake_case, the
field names of `DeploySettings`); keys an environment leaves out take the defaults here, which are
the dev defaults. The environment is picked by `-c env=<name>` (or `app.py --env <name>`).
A wrong key or value stops the synth with a message naming the key, the environment and
cdk.json, never a stack trace deep inside CDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from hdfs_events.ids import IAM_UNIQUE_ID, validate_cluster_name
from hdfs_events.names import LOG_MODES

CONTEXT_ENV = "env"
CONTEXT_ENVIRONMENTS = "environments"
SOURCE = "cdk.json"
_ENV_NAME = re.compile(r"[a-z][a-z0-9-]{0,15}")
# A key's ARN, as [sync] kms_key_id takes it: IAM names a key by its ARN, never by an alias.
_KMS_KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")
# The worker types a Glue 4.0+ Spark ETL (glueetl) job accepts (Glue API, CreateJob WorkerType;
# G.12X, G.16X and R.* only in some Regions). G.025X is for streaming jobs only, Z.2X for Ray.
_SPARK_ETL_WORKER_TYPES = ("G.1X", "G.2X", "G.4X", "G.8X", "G.12X", "G.16X", "R.1X", "R.2X",
                           "R.4X", "R.8X")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class SettingsError(ValueError):
    """A cdk.json setting that is missing, unknown or out of range."""


@dataclass(frozen=True, slots=True)
class DeploySettings:
    env_name: str = "dev"
    # Stateful resources (bucket, tables, log groups, keys) survive a stack delete when True.
    retain_data: bool = False
    # Dev buckets empty themselves on delete (a small CDK custom resource); never with RETAIN.
    auto_delete_objects: bool = True
    # Optional fixed target; None keeps the stacks environment-agnostic (no lookups at synth).
    account: str | None = None
    region: str | None = None
    # moto has no CDK bootstrap: the local env synthesizes without the bootstrap-version rule.
    bootstrap_version_rule: bool = True
    # project/environment tags on every resource; off in `local` because moto 5.2 fails to
    # create a KMS key from a template whose key carries tags (KeyError 'TagKey').
    tag_resources: bool = True
    # HDFS clusters that ship events: one on-prem principal each, scoped to its own items.
    clusters: tuple[str, ...] = ("dev",)
    # Principals this app does not create that may also send a cluster's events, as
    # "<cluster>=<IAM unique id>" (a site's own role: its RoleId "AROA..."; see
    # docs/consumer.md, "Cluster identity"). `local` names moto's SenderId, which moto gives
    # every message whoever sends it.
    extra_senders: tuple[str, ...] = ()

    # --- ingest -------------------------------------------------------------------------
    max_receive_count: int = 5
    queue_retention_days: int = 4
    dlq_retention_days: int = 14
    consumer_timeout_seconds: int = 60
    consumer_memory_mb: int = 1024
    consumer_max_concurrency: int = 5
    # False in `local`: moto would try to invoke the function through Docker on every send.
    consumer_mapping_enabled: bool = True
    log_retention_days: int = 30
    log_level: str = "INFO"
    log_mode: str = "mutations"
    index_prefixes: tuple[str, ...] = ("/",)
    # The public Powertools for AWS Lambda (Python) layer of the version constraints.txt pins
    # (no version here: what the tests run is what deploys; stacks/ingest_function.py).
    # Off in `local`: moto cannot resolve another account's layer nor AWS's public SSM
    # parameters (the handler runs in-process there). A flag, not null: CDK context drops null
    # values on their way through jsii.
    powertools_layer: bool = True
    copy_visibility_timeout_seconds: int = 300

    # --- on-prem principal -----------------------------------------------------------------
    # Lake prefixes the return channel may copy back to HDFS (GetObject/ListBucket only there).
    export_prefixes: tuple[str, ...] = ("exports/",)
    # IAM Roles Anywhere beside the IAM user (off in `local`: moto does not model it and fails
    # on a template that reads its attributes).
    roles_anywhere: bool = True
    # PEM of the site's CA for IAM Roles Anywhere; None = a placeholder CA whose private key
    # was destroyed, with the trust anchor disabled until a real CA is configured.
    roles_anywhere_ca_file: str | None = None
    # `hdfs-events-agent sync` destinations, the customer's buckets: "<cluster>=s3://bucket/
    # prefix/". The cluster's principal may write, read and delete under exactly that prefix.
    sync_destinations: tuple[str, ...] = ()
    # The KMS keys `sync` writes those objects under ([sync] kms_key_id): "<cluster>=<key ARN>".
    # The principal may make S3 use each (GenerateDataKey, Decrypt through S3 only).
    sync_kms_keys: tuple[str, ...] = ()

    # --- storage -----------------------------------------------------------------------------
    lake_kms: bool = False
    lake_versioned: bool = False
    raw_expire_days: int = 30
    quarantine_expire_days: int = 365
    access_log_expire_days: int = 90

    # --- analytics ---------------------------------------------------------------------------
    glue_worker_type: str = "G.1X"
    glue_workers: int = 2
    glue_schedule: str = "cron(15 * * * ? *)"
    glue_timeout_minutes: int = 120
    small_file_bytes: int = 8 * 1024 * 1024
    mass_delete_threshold: int = 1000
    rollup_prefix_depth: int = 2

    # --- monitoring --------------------------------------------------------------------------
    oldest_message_alarm_seconds: int = 900
    heartbeat_missing_minutes: int = 10
    # A NameNode restart (fsimage load, safe mode) takes minutes; the agent rides through it.
    namenode_unavailable_minutes: int = 15
    # The sync's lag in bytes (SyncBytesPending) above this for 15 minutes pages: the replica
    # is that far behind HDFS (10 GiB: an hour at ~3 MB/s).
    sync_bytes_pending_alarm: int = 10 * 1024**3
    # `hdfs-events-agent verify` (IndexDrift): alarm when more index entries than this differ
    # (keep it equal to agent.toml's [verify] drift_threshold), and when no verify has run for
    # this many hours (its timer runs daily, up to 1 h late, and a large walk takes hours).
    index_drift_alarm: int = 0
    index_drift_missing_hours: int = 30
    # `audit run` (the NameNode's audit log, docs/agent.md). DeniedAccess summed over every
    # command: more than this many denials in 5 minutes pages (a scanner, a job run as the
    # wrong user). Tune it to the cluster's own background of denials (the dashboard's Audit
    # row shows it); static rather than an anomaly band: a count that is mostly 0 trains a band
    # of no width, and a new deployment has no history to train one on.
    denied_access_alarm: int = 100
    # AuditLagSeconds (now minus the NameNode time of the newest line shipped) above this for
    # 15 minutes pages. It counts from the newest line *shipped* (a mutation, a denial, a read
    # under read_paths): raise it for a cluster that can go this long without one.
    audit_lag_alarm_seconds: int = 3600
    # Audit lines that did not parse (AuditLinesUnparsed; shipped with a reason, unattributable)
    # above this many in 5 minutes page: usually a time_format or log4j layout that does not
    # match the NameNode's.
    audit_lines_unparsed_alarm: int = 0
    alarm_email: str | None = None

    def sync_destinations_of(self, cluster: str) -> list[tuple[str, str]]:
        """(bucket, prefix) of each sync destination of `cluster`; the prefix ends in "/"."""
        return [parse_sync_destination(url) for entry in self.sync_destinations
                for name, _, url in [entry.partition("=")] if name == cluster]

    def sync_kms_keys_of(self, cluster: str) -> list[str]:
        return [arn for entry in self.sync_kms_keys
                for name, _, arn in [entry.partition("=")] if name == cluster]

    def extra_senders_of(self, cluster: str) -> list[str]:
        return [sender for entry in self.extra_senders
                for name, _, sender in [entry.partition("=")] if name == cluster]

    @property
    def prefix(self) -> str:
        """Resource-name prefix of this environment, e.g. `hdfs-events-prod`."""
        return f"hdfs-events-{self.env_name}"

    @property
    def glue_database(self) -> str:
        return f"hdfs_events_{self.env_name.replace('-', '_')}"


# S3 bucket names (general purpose buckets): 3-63 of a-z, 0-9, '.', '-', starting and ending
# with a letter or digit.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def parse_sync_destination(url: str) -> tuple[str, str]:
    """`s3://bucket/prefix/` -> (bucket, "prefix/"); ValueError saying the rule otherwise.

    A prefix is required: the sync is the only writer of its prefix (it aborts every multipart
    upload it finds open there), so it never takes a whole bucket."""
    if not url.startswith("s3://"):
        raise ValueError(f"{url!r} is not s3://bucket/prefix/")
    bucket, _, prefix = url[5:].partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise ValueError(f"{url!r}: {bucket!r} is not an S3 bucket name (3-63 of a-z, 0-9, "
                         "'.', '-')")
    prefix = prefix.strip("/")
    if not prefix or "*" in prefix or "//" in prefix or ".." in prefix.split("/"):
        raise ValueError(f"{url!r}: needs a prefix (s3://bucket/prefix/), without '*', '//' "
                         "or '..': the sync owns that prefix, never a whole bucket")
    return bucket, prefix + "/"


def load_settings(context: Mapping[str, Any], env_name: str | None = None) -> DeploySettings:
    """The settings of `env_name` (default: context `env`, else dev) from cdk.json context."""
    name = env_name or context.get(CONTEXT_ENV) or "dev"
    environments = context.get(CONTEXT_ENVIRONMENTS)
    if not isinstance(environments, Mapping):
        raise SettingsError(f"{SOURCE}: context.{CONTEXT_ENVIRONMENTS} must be a mapping of "
                            "environment names to settings")
    if name not in environments:
        raise SettingsError(f"{SOURCE}: unknown environment {name!r}; known: "
                            f"{', '.join(sorted(environments))}")
    raw = environments[name]
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{SOURCE}: context.{CONTEXT_ENVIRONMENTS}.{name} must be a mapping")
    return _build(str(name), raw)


def _build(name: str, raw: Mapping[str, Any]) -> DeploySettings:
    where = f"{SOURCE}: context.{CONTEXT_ENVIRONMENTS}.{name}"
    if not _ENV_NAME.fullmatch(name):
        raise SettingsError(f"{where}: environment name must be 1-16 of a-z, 0-9, '-'")
    hints = get_type_hints(DeploySettings)
    known = {f.name for f in fields(DeploySettings)} - {"env_name"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SettingsError(f"{where}: unknown setting(s) {unknown}")
    values: dict[str, Any] = {"env_name": name}
    for key, value in raw.items():
        values[key] = _coerce(f"{where}.{key}", hints[key], value)
    settings = DeploySettings(**values)
    _validate(where, settings)
    return settings


def _coerce(where: str, hint: Any, value: Any) -> Any:
    args = get_args(hint)
    optional = get_origin(hint) in (Union, UnionType) and type(None) in args
    base = next(a for a in args if a is not type(None)) if optional else hint
    if value is None:
        if optional:
            return None
        raise SettingsError(f"{where}: must not be null")
    if get_origin(base) is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{where}: must be a list of strings")
        return tuple(value)
    # bool is an int subclass: `true` must not pass as a count, nor 1 as a flag.
    if base is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise SettingsError(f"{where}: must be an integer, got {value!r}")
    if base is bool and not isinstance(value, bool):
        raise SettingsError(f"{where}: must be true or false, got {value!r}")
    if base is str and not isinstance(value, str):
        raise SettingsError(f"{where}: must be a string, got {value!r}")
    return value


def _validate(where: str, s: DeploySettings) -> None:
    def check(ok: bool, key: str, message: str) -> None:
        if not ok:
            raise SettingsError(f"{where}.{key}: {message}")

    check(bool(s.clusters), "clusters", "needs at least one cluster name")
    for cluster in s.clusters:
        try:
            validate_cluster_name(cluster)
        except ValueError as exc:
            raise SettingsError(f"{where}.clusters: {exc}") from exc
    check(len(set(s.clusters)) == len(s.clusters), "clusters", "names must be unique")
    for entry in s.extra_senders:
        cluster, _, sender = entry.partition("=")
        check(cluster in s.clusters and bool(IAM_UNIQUE_ID.fullmatch(sender)), "extra_senders",
              f"{entry!r} is not '<cluster>=<IAM unique id>' of a cluster in 'clusters'")
    for entry in s.sync_destinations:
        cluster, sep, url = entry.partition("=")
        check(bool(sep) and cluster in s.clusters, "sync_destinations",
              f"{entry!r} is not '<cluster>=s3://bucket/prefix/' of a cluster in 'clusters'")
        try:
            parse_sync_destination(url)
        except ValueError as exc:
            raise SettingsError(f"{where}.sync_destinations: {exc}") from exc
    for entry in s.sync_kms_keys:
        cluster, _, arn = entry.partition("=")
        check(cluster in s.clusters and bool(_KMS_KEY_ARN.fullmatch(arn)), "sync_kms_keys",
              f"{entry!r} is not '<cluster>=arn:aws:kms:<region>:<account>:key/<id>' of a "
              "cluster in 'clusters'")
    check(s.sync_bytes_pending_alarm >= 1, "sync_bytes_pending_alarm", "must be >= 1 (bytes)")
    check(s.index_drift_alarm >= 0, "index_drift_alarm", "must be >= 0 (entries)")
    check(s.denied_access_alarm >= 0, "denied_access_alarm",
          "must be >= 0 (denied accesses in 5 minutes)")
    # `audit run` publishes AuditLagSeconds every metrics_interval_s (60 by default).
    check(s.audit_lag_alarm_seconds >= 60, "audit_lag_alarm_seconds", "must be >= 60 (seconds)")
    check(s.audit_lines_unparsed_alarm >= 0, "audit_lines_unparsed_alarm",
          "must be >= 0 (lines in 5 minutes)")
    # Hourly periods: CloudWatch evaluates at most 7 days of them.
    check(1 <= s.index_drift_missing_hours <= 168, "index_drift_missing_hours",
          "must be 1..168 (CloudWatch evaluates at most 7 days)")
    check(not (s.retain_data and s.auto_delete_objects), "auto_delete_objects",
          "cannot be true when retain_data is true")
    # SQS allows maxReceiveCount 1..1000.
    check(1 <= s.max_receive_count <= 1000, "max_receive_count", "must be 1..1000")
    check(1 <= s.queue_retention_days <= 14, "queue_retention_days", "SQS allows 1..14 days")
    check(1 <= s.dlq_retention_days <= 14, "dlq_retention_days", "SQS allows 1..14 days")
    # 6x the function timeout must stay within SQS's 12-hour visibility limit.
    check(1 <= s.consumer_timeout_seconds <= 900, "consumer_timeout_seconds",
          "Lambda allows 1..900 seconds")
    check(128 <= s.consumer_memory_mb <= 10240, "consumer_memory_mb", "must be 128..10240")
    # SQS event sources accept MaximumConcurrency 2..1000.
    check(2 <= s.consumer_max_concurrency <= 1000, "consumer_max_concurrency",
          "SQS event sources allow 2..1000")
    check(s.log_level in _LOG_LEVELS, "log_level", f"must be one of {_LOG_LEVELS}")
    check(s.log_mode in LOG_MODES, "log_mode", f"must be one of {LOG_MODES}")
    check(all(p.startswith("/") for p in s.index_prefixes), "index_prefixes",
          "HDFS prefixes must be absolute paths")
    check(all(p and not p.startswith("/") and p.endswith("/") and ".." not in p
              for p in s.export_prefixes), "export_prefixes",
          "lake prefixes look like 'exports/' (relative, ending in '/', no '..')")
    check(s.glue_worker_type in _SPARK_ETL_WORKER_TYPES, "glue_worker_type",
          f"{s.glue_worker_type!r} cannot run the Glue 5.1 Spark ETL jobs (G.025X is for "
          f"streaming jobs only, Z.2X for Ray); must be one of {_SPARK_ETL_WORKER_TYPES}")
    check(s.glue_workers >= 2, "glue_workers", "Glue Spark jobs need at least 2 workers")
    check(s.glue_schedule.startswith("cron(") and s.glue_schedule.endswith(")"),
          "glue_schedule", "must be a Glue cron expression like 'cron(15 * * * ? *)'")
    check(s.raw_expire_days >= 2, "raw_expire_days",
          "raw/ must outlive at least one compaction cycle (>= 2 days)")
    check(s.quarantine_expire_days >= s.raw_expire_days, "quarantine_expire_days",
          "quarantine/ is kept at least as long as raw/")
    check(s.log_retention_days in _LOG_RETENTION_DAYS, "log_retention_days",
          f"CloudWatch Logs allows {_LOG_RETENTION_DAYS}")
    check(s.heartbeat_missing_minutes >= 2, "heartbeat_missing_minutes", "must be >= 2")
    check(s.namenode_unavailable_minutes >= 2, "namenode_unavailable_minutes", "must be >= 2")


# The retention periods CloudWatch Logs accepts (PutRetentionPolicy).
_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                       1827, 2192, 2557, 2922, 3288, 3653)
