"""The agent.toml sections of the live agent: [hdfs], [kerberos], [inotify], [lease], [metrics],
[verify]. onprem_agent.config hands them out raw; they are checked here, each error naming the
file and the key, and an unknown key is an error (a typo must not fall back to a default).

    [hdfs]
    uri = "hdfs://nameservice1"          # required for run/doctor/verify
    conf_dir = "/etc/hadoop/conf"        # else HADOOP_CONF_DIR
    classpath = []                       # else `hadoop classpath --glob`, HADOOP_CLASSPATH, pyspark
    max_heap = "512m"
    reconnect_initial_s = 1              # NameNode unavailable: first wait before reconnecting,
    reconnect_max_s = 30                 #   doubling (jittered) up to this; the agent never exits
    [kerberos]
    principal = "hdfs-events/edge1.example.com@EXAMPLE.COM"
    keytab = "/etc/security/keytabs/hdfs-events.keytab"
    relogin_interval_s = 3600           # how often to ask Hadoop whether the ticket is due
    [inotify]
    poll_timeout_ms = 1000               # bounded poll: worst-case idle latency
    max_batches_per_drain = 1000
    gap_policy = "snapshot"              # or "stop"
    first_start = "listing"              # or "fsimage": the index written from the image
    snapshot_paths = []                  # else [filter] cover_dirs, else ["/"]
    snapshot_workers = 8
    alert_topic_arn = ""                 # SNS topic for gaps (and `stop`)
    [lease]
    enabled = true
    table = ""                           # else [checkpoint] table
    duration_s = 30
    renew_interval_s = 10
    [metrics]
    prometheus_port = 9464               # 0 = no endpoint
    prometheus_addr = "127.0.0.1"
    heartbeat_interval_s = 60            # 0 = no CloudWatch heartbeat
    [verify]
    index_table = "hdfs-events-index"
    drift_threshold = 0                  # alert when more than this many entries differ
    alert_topic_arn = ""
    workers = 8
    drift_queue_url = ""                 # one SQS message per drifting path (DriftAlertQueueUrl)
    alert_max_paths = 1000               # per run; past it one summary message says how many more
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onprem_agent.config import AgentConfig, ConfigError

GAP_POLICIES = ("snapshot", "stop")
# First start (no checkpoint): list the covered namespace, or write the index from the
# NameNode's fsimage by the inventory job ([fsimage]; docs/fsimage.md) and stream after it.
FIRST_STARTS = ("listing", "fsimage")


@dataclass(frozen=True, slots=True)
class HdfsSettings:
    uri: str | None = None
    conf_dir: str | None = None
    classpath: tuple[str, ...] = ()
    max_heap: str = "512m"
    reconnect_initial_s: int = 1
    reconnect_max_s: int = 30


@dataclass(frozen=True, slots=True)
class KerberosSettings:
    principal: str | None = None
    keytab: Path | None = None
    relogin_interval_s: int = 3600

    @property
    def enabled(self) -> bool:
        return self.principal is not None


@dataclass(frozen=True, slots=True)
class InotifySettings:
    poll_timeout_ms: int = 1000
    max_batches_per_drain: int = 1000
    gap_policy: str = "snapshot"
    first_start: str = "listing"
    snapshot_paths: tuple[str, ...] = ("/",)
    snapshot_workers: int = 8
    alert_topic_arn: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    enabled: bool = False
    table: str | None = None
    duration_s: int = 30
    renew_interval_s: int = 10


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    prometheus_port: int = 9464
    prometheus_addr: str = "127.0.0.1"
    heartbeat_interval_s: int = 60


@dataclass(frozen=True, slots=True)
class VerifySettings:
    index_table: str | None = None
    drift_threshold: int = 0
    alert_topic_arn: str | None = None
    workers: int = 8
    drift_queue_url: str | None = None
    alert_max_paths: int = 1000


@dataclass(frozen=True, slots=True)
class LiveSettings:
    hdfs: HdfsSettings
    kerberos: KerberosSettings
    inotify: InotifySettings
    lease: LeaseSettings
    metrics: MetricsSettings
    verify: VerifySettings


class _Section:
    def __init__(self, config: AgentConfig, name: str) -> None:
        self.file, self.name = config.path.name, name
        self.raw: Mapping[str, Any] = config.section(name)

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.file}: [{self.name}] {key}: {message}")

    def check_keys(self, known: tuple[str, ...]) -> None:
        for key in self.raw:
            if key not in known:
                raise self.error(key, f"unknown key; known: {', '.join(known)}")

    def get(self, key: str, typ: type, default: Any, *, low: int | None = None) -> Any:
        if key not in self.raw:
            return default
        value = self.raw[key]
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            raise self.error(key, f"must be {_NAMES[typ]}, got {value!r}")
        if typ is int and low is not None and value < low:
            raise self.error(key, f"must be >= {low}")
        if typ is str and value == "":
            return default
        return value

    def strings(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.get(key, list, None)
        if value is None:
            return default
        if not all(isinstance(v, str) and v for v in value):
            raise self.error(key, "must be a list of non-empty strings")
        return tuple(value)


_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}


def load_live_settings(config: AgentConfig) -> LiveSettings:
    h = _Section(config, "hdfs")
    h.check_keys(("uri", "conf_dir", "classpath", "max_heap", "reconnect_initial_s",
                  "reconnect_max_s"))
    uri = h.get("uri", str, None)
    if uri is not None and not uri.startswith(("hdfs://", "viewfs://")):
        raise h.error("uri", f"must be hdfs://<namenode or nameservice>, got {uri!r}")
    # A stopped NameNode refuses at once (measured: the HDFS client tries a refused connection
    # once unless dfs.client.retry.policy.enabled), so these waits are the agent's pace; the cap
    # bounds how late it notices a NameNode that is back.
    initial = _bounded(h, "reconnect_initial_s", 1, 1, 600)
    most = _bounded(h, "reconnect_max_s", max(30, initial), 1, 3600)
    if most < initial:
        raise h.error("reconnect_max_s", f"must be >= reconnect_initial_s ({initial})")
    hdfs = HdfsSettings(uri=uri, conf_dir=h.get("conf_dir", str, None),
                        classpath=h.strings("classpath", ()),
                        max_heap=h.get("max_heap", str, "512m"),
                        reconnect_initial_s=initial, reconnect_max_s=most)

    k = _Section(config, "kerberos")
    k.check_keys(("principal", "keytab", "relogin_interval_s"))
    principal, keytab = k.get("principal", str, None), k.get("keytab", str, None)
    if (principal is None) != (keytab is None):
        raise k.error("keytab" if keytab is None else "principal",
                      "principal and keytab go together")
    # Asking is cheap (Hadoop renews only in the ticket's last 20%), so short intervals are
    # allowed: a realm with tickets of minutes needs them.
    kerberos = KerberosSettings(principal=principal, keytab=Path(keytab) if keytab else None,
                                relogin_interval_s=k.get("relogin_interval_s", int, 3600, low=1))

    i = _Section(config, "inotify")
    i.check_keys(("poll_timeout_ms", "max_batches_per_drain", "gap_policy", "first_start",
                  "snapshot_paths", "snapshot_workers", "alert_topic_arn"))
    policy = i.get("gap_policy", str, "snapshot")
    if policy not in GAP_POLICIES:
        raise i.error("gap_policy", f"must be one of {', '.join(GAP_POLICIES)}, got {policy!r}")
    first_start = i.get("first_start", str, "listing")
    if first_start not in FIRST_STARTS:
        raise i.error("first_start", f"must be one of {', '.join(FIRST_STARTS)}, got "
                      f"{first_start!r}")
    paths = i.strings("snapshot_paths", config.filter.cover_dirs or ("/",))
    for p in paths:
        if not p.startswith("/"):
            raise i.error("snapshot_paths", f"{p!r} is not an absolute HDFS path")
    # A bounded poll: Hadoop's poll(timeout) backs off exponentially up to the timeout, so the
    # timeout is the worst idle latency. 60 s (hdfs-inotify-example) is far too long.
    inotify = InotifySettings(
        poll_timeout_ms=_bounded(i, "poll_timeout_ms", 1000, 10, 30_000),
        max_batches_per_drain=_bounded(i, "max_batches_per_drain", 1000, 1, 100_000),
        gap_policy=policy, first_start=first_start, snapshot_paths=paths,
        snapshot_workers=_bounded(i, "snapshot_workers", 8, 1, 64),
        alert_topic_arn=_arn(i, "alert_topic_arn"))

    le = _Section(config, "lease")
    le.check_keys(("enabled", "table", "duration_s", "renew_interval_s"))
    duration = le.get("duration_s", int, 30, low=5)
    renew = le.get("renew_interval_s", int, max(1, duration // 3), low=1)
    if renew * 2 > duration:
        raise le.error("renew_interval_s", f"must be at most half of duration_s ({duration}) "
                                           "so one missed renewal does not lose the lease")
    lease = LeaseSettings(enabled=le.get("enabled", bool, bool(le.raw)),
                          table=le.get("table", str, None) or config.checkpoint.table,
                          duration_s=duration, renew_interval_s=renew)
    if lease.enabled and not lease.table:
        raise le.error("table", "required when the lease is enabled (or set [checkpoint] table)")

    m = _Section(config, "metrics")
    m.check_keys(("prometheus_port", "prometheus_addr", "heartbeat_interval_s"))
    metrics = MetricsSettings(
        prometheus_port=_bounded(m, "prometheus_port", 9464, 0, 65535),
        prometheus_addr=m.get("prometheus_addr", str, "127.0.0.1"),
        heartbeat_interval_s=_bounded(m, "heartbeat_interval_s", 60, 0, 3600))

    v = _Section(config, "verify")
    v.check_keys(("index_table", "drift_threshold", "alert_topic_arn", "workers",
                  "drift_queue_url", "alert_max_paths"))
    verify = VerifySettings(index_table=v.get("index_table", str, None),
                            drift_threshold=v.get("drift_threshold", int, 0, low=0),
                            alert_topic_arn=_arn(v, "alert_topic_arn"),
                            workers=_bounded(v, "workers", 8, 1, 64),
                            drift_queue_url=_drift_queue_url(v),
                            alert_max_paths=_bounded(v, "alert_max_paths", 1000, 0, 1_000_000))
    return LiveSettings(hdfs=hdfs, kerberos=kerberos, inotify=inotify, lease=lease,
                        metrics=metrics, verify=verify)


def _bounded(s: _Section, key: str, default: int, low: int, high: int) -> int:
    value = s.get(key, int, default, low=low)
    if value > high:
        raise s.error(key, f"must be <= {high}")
    return value


def _drift_queue_url(s: _Section) -> str | None:
    value = s.get("drift_queue_url", str, None) or None
    if value is not None and not value.startswith(("https://", "http://")):
        raise s.error("drift_queue_url", f"must be an SQS queue URL (https://sqs...), got "
                                         f"{value!r}")
    if value is not None and value.endswith(".fifo"):
        # The alerts carry no MessageGroupId: a FIFO queue would refuse every one.
        raise s.error("drift_queue_url", f"must be the standard drift alert queue (the "
                                         f"DriftAlertQueueUrl output), not a FIFO queue: {value!r}")
    return value


def _arn(s: _Section, key: str) -> str | None:
    value = s.get(key, str, None)
    if value is not None and not value.startswith("arn:"):
        raise s.error(key, f"must be an SNS topic ARN (arn:aws:sns:...), got {value!r}")
    return value
