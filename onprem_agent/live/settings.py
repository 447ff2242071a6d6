"""The agent.toml sections of the live agent: [hdfs], [kerberos], [inotify], [lease], [metrics],
[verify], declared for onprem_agent.agent_toml, which checks them (each error naming the file
and the key; an unknown key is an error, so a typo never falls back to a default).

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
    roll_edits_every_txids = 50000       # the agent rolls the edit log (0 = never; stream.py)
    gap_policy = "snapshot"              # or "stop" (exit 3), or "fsimage": the index repaired
                                         #   from the NameNode's image ([fsimage] inventory_job)
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

from dataclasses import dataclass
from pathlib import Path

from onprem_agent.agent_toml import Key, Section, Values
from onprem_agent.config import CHECKPOINT, FILTER, AgentConfig, hdfs_path

# Purged edits (a GAP): list the covered namespace, exit 3, or repair the index from the
# NameNode's fsimage by the inventory job ([fsimage]; docs/agent.md, "Checkpoint").
GAP_POLICIES = ("snapshot", "stop", "fsimage")
# First start (no checkpoint): list the covered namespace, or write the index from the
# NameNode's fsimage by the inventory job ([fsimage]; docs/fsimage.md) and stream after it.
FIRST_STARTS = ("listing", "fsimage")


@dataclass(frozen=True, slots=True)
class HdfsSettings:
    uri: str | None
    conf_dir: str | None
    classpath: tuple[str, ...]
    max_heap: str
    reconnect_initial_s: int
    reconnect_max_s: int


@dataclass(frozen=True, slots=True)
class KerberosSettings:
    principal: str | None
    keytab: Path | None
    relogin_interval_s: int

    @property
    def enabled(self) -> bool:
        return self.principal is not None


@dataclass(frozen=True, slots=True)
class InotifySettings:
    poll_timeout_ms: int
    max_batches_per_drain: int
    roll_edits_every_txids: int
    gap_policy: str
    first_start: str
    snapshot_paths: tuple[str, ...]
    snapshot_workers: int
    alert_topic_arn: str | None


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    enabled: bool
    table: str | None
    duration_s: int
    renew_interval_s: int


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    prometheus_port: int
    prometheus_addr: str
    heartbeat_interval_s: int


@dataclass(frozen=True, slots=True)
class VerifySettings:
    index_table: str | None
    drift_threshold: int
    alert_topic_arn: str | None
    workers: int
    drift_queue_url: str | None
    alert_max_paths: int


@dataclass(frozen=True, slots=True)
class LiveSettings:
    hdfs: HdfsSettings
    kerberos: KerberosSettings
    inotify: InotifySettings
    lease: LeaseSettings
    metrics: MetricsSettings
    verify: VerifySettings


def sns_topic_arn(value: str) -> str:
    if not value.startswith("arn:"):
        raise ValueError(f"must be an SNS topic ARN (arn:aws:sns:...), got {value!r}")
    return value


def _namenode_uri(uri: str) -> str:
    if not uri.startswith(("hdfs://", "viewfs://")):
        raise ValueError(f"must be hdfs://<namenode or nameservice>, got {uri!r}")
    return uri


def _drift_queue_url(url: str) -> str:
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"must be an SQS queue URL (https://sqs...), got {url!r}")
    if url.endswith(".fifo"):
        # The alerts carry no MessageGroupId: a FIFO queue would refuse every one.
        raise ValueError("must be the standard drift alert queue (the DriftAlertQueueUrl "
                         f"output), not a FIFO queue: {url!r}")
    return url


def _hdfs(v: Values) -> HdfsSettings:
    initial = v["reconnect_initial_s"]
    # A first wait above the default cap raises the cap with it.
    most = v["reconnect_max_s"] if "reconnect_max_s" in v.given else max(30, initial)
    if most < initial:
        raise v.error("reconnect_max_s", f"must be >= reconnect_initial_s ({initial})")
    return HdfsSettings(uri=v["uri"], conf_dir=v["conf_dir"], classpath=v["classpath"],
                        max_heap=v["max_heap"], reconnect_initial_s=initial,
                        reconnect_max_s=most)


def _kerberos(v: Values) -> KerberosSettings:
    if (v["principal"] is None) != (v["keytab"] is None):
        raise v.error("keytab" if v["keytab"] is None else "principal",
                      "principal and keytab go together")
    return KerberosSettings(principal=v["principal"], keytab=v["keytab"],
                            relogin_interval_s=v["relogin_interval_s"])


def _inotify(v: Values) -> InotifySettings:
    paths = v["snapshot_paths"]
    return InotifySettings(
        poll_timeout_ms=v["poll_timeout_ms"], max_batches_per_drain=v["max_batches_per_drain"],
        roll_edits_every_txids=v["roll_edits_every_txids"], gap_policy=v["gap_policy"],
        first_start=v["first_start"],
        snapshot_paths=paths if paths is not None else v.read(FILTER).cover_dirs or ("/",),
        snapshot_workers=v["snapshot_workers"], alert_topic_arn=v["alert_topic_arn"])


def _lease(v: Values) -> LeaseSettings:
    duration = v["duration_s"]
    renew = v["renew_interval_s"] or max(1, duration // 3)
    if renew * 2 > duration:
        raise v.error("renew_interval_s", f"must be at most half of duration_s ({duration}) "
                                          "so one missed renewal does not lose the lease")
    # A [lease] table turns the lease on unless it says enabled = false.
    enabled = v["enabled"] if v["enabled"] is not None else v.present
    table = v["table"] or v.read(CHECKPOINT).table
    if enabled and not table:
        raise v.error("table", "required when the lease is enabled (or set [checkpoint] table)")
    return LeaseSettings(enabled=enabled, table=table, duration_s=duration,
                         renew_interval_s=renew)


HDFS = Section("hdfs", {
    "uri": Key(str, parse=_namenode_uri),
    "conf_dir": Key(str),
    "classpath": Key(list, ()),
    "max_heap": Key(str, "512m"),
    # A stopped NameNode refuses at once (measured: the HDFS client tries a refused connection
    # once unless dfs.client.retry.policy.enabled), so these waits are the agent's pace; the
    # cap bounds how late it notices a NameNode that is back.
    "reconnect_initial_s": Key(int, 1, low=1, high=600),
    "reconnect_max_s": Key(int, low=1, high=3600),  # default: max(30, reconnect_initial_s)
}, build=_hdfs)
KERBEROS = Section("kerberos", {
    "principal": Key(str),
    "keytab": Key(str, parse=Path),
    # Asking is cheap (Hadoop renews only in the ticket's last 20%), so short intervals are
    # allowed: a realm with tickets of minutes needs them.
    "relogin_interval_s": Key(int, 3600, low=1),
}, build=_kerberos)
INOTIFY = Section("inotify", {
    # A bounded poll: Hadoop's poll(timeout) backs off exponentially up to the timeout, so the
    # timeout is the worst idle latency. 60 s (hdfs-inotify-example) is far too long.
    "poll_timeout_ms": Key(int, 1000, low=10, high=30_000),
    "max_batches_per_drain": Key(int, 1000, low=1, high=100_000),
    # Each inotify call rereads the in-progress edit segment up to the txid asked for
    # (onprem_agent/live/stream.py): 50,000 txids keep a call's reread under ~40 ms on an idle
    # NameNode (~120 ms on a loaded one, bench.chain_speed), at one roll every 25 s at 2,000
    # txids/s (an HA standby rolls every 120 s whatever the rate).
    "roll_edits_every_txids": Key(int, 50_000, low=0),
    "gap_policy": Key(str, "snapshot", one_of=GAP_POLICIES),
    "first_start": Key(str, "listing", one_of=FIRST_STARTS),
    "snapshot_paths": Key(list, parse=hdfs_path),  # default: [filter] cover_dirs, else "/"
    "snapshot_workers": Key(int, 8, low=1, high=64),
    "alert_topic_arn": Key(str, parse=sns_topic_arn),
}, build=_inotify)
LEASE = Section("lease", {
    "enabled": Key(bool),
    "table": Key(str),  # default: [checkpoint] table
    "duration_s": Key(int, 30, low=5),
    "renew_interval_s": Key(int, low=1),  # default: a third of duration_s
}, build=_lease)
METRICS = Section("metrics", {
    "prometheus_port": Key(int, 9464, low=0, high=65535),
    "prometheus_addr": Key(str, "127.0.0.1"),
    "heartbeat_interval_s": Key(int, 60, low=0, high=3600),
}, build=lambda v: MetricsSettings(**{key: v[key] for key in METRICS.keys}))
VERIFY = Section("verify", {
    "index_table": Key(str),
    "drift_threshold": Key(int, 0, low=0),
    "alert_topic_arn": Key(str, parse=sns_topic_arn),
    "workers": Key(int, 8, low=1, high=64),
    "drift_queue_url": Key(str, parse=_drift_queue_url),
    "alert_max_paths": Key(int, 1000, low=0, high=1_000_000),
}, build=lambda v: VerifySettings(**{key: v[key] for key in VERIFY.keys}))


def load_live_settings(config: AgentConfig) -> LiveSettings:
    inotify = config.read(INOTIFY)
    _check_image_index_job(config, inotify)
    return LiveSettings(hdfs=config.read(HDFS), kerberos=config.read(KERBEROS),
                        inotify=inotify, lease=config.read(LEASE),
                        metrics=config.read(METRICS), verify=config.read(VERIFY))


def _check_image_index_job(config: AgentConfig, inotify: InotifySettings) -> None:
    """first_start or gap_policy "fsimage" runs the inventory job: [fsimage] must name it (and
    the lake bucket), checked when the file is read, not hours later at the first gap."""
    uses = [f'{key} = "fsimage"' for key, value in (("first_start", inotify.first_start),
                                                    ("gap_policy", inotify.gap_policy))
            if value == "fsimage"]
    if not uses:
        return
    from onprem_agent.image_fetch import FSIMAGE  # the image's code only when it is used

    why = f"required with [inotify] {' and '.join(uses)}"
    if not config.toml.has(FSIMAGE):
        raise config.toml.error("[fsimage]", f"{why} (bucket and inventory_job at least)")
    if not config.read(FSIMAGE).inventory_job:
        raise config.toml.error("[fsimage] inventory_job",
                                f"{why} (CDK output InventoryJobName)")
