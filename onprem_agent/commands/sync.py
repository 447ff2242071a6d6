"""`hdfs-events-agent sync run|status|verify --config agent.toml`: live replication of the
covered HDFS directories to S3 ([sync] in agent.toml; docs/sync.md).

- `run`: its own process (systemd unit hdfs-events-sync), its own inotify reader and its own
  checkpoint (the replicated txid, in the sync state table). Exit 0 on SIGTERM/SIGINT, 1 on a
  setup or runtime error.
- `status`: the replicated txid, the running window, pending and parked paths (DynamoDB only).
- `verify --prefix P`: HDFS's files under P against the S3 objects (size, mtime, metadata, and
  the HDFS COMPOSITE-CRC32C against S3's full-object CRC32C); prints the drift, exit 1 when any.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("onprem_agent.sync")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (("run", "replicate until stopped"),
                       ("status", "replicated txid, running window, pending and parked paths"),
                       ("verify", "compare HDFS and S3 under a prefix, checksums included")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--config", type=Path, required=True, help="agent.toml")
        p.add_argument("--cluster", default=None, help="override [cluster]")
        if name == "run":
            p.add_argument("--log-level", default="INFO")
        if name == "verify":
            p.add_argument("--prefix", action="append", required=True,
                           help="HDFS directory to check (repeatable)")
            p.add_argument("--max-lines", type=int, default=200)


def run(args: argparse.Namespace) -> int:
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.config import load_config
    from onprem_agent.live.settings import load_live_settings
    from onprem_agent.sync.settings import SYNC

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        live = load_live_settings(config)
        sync = config.read(SYNC)
        if args.action != "status" and live.hdfs.uri is None:
            raise ConfigError(f"{config.path.name}: [hdfs] uri: required for `sync {args.action}`")
    except ConfigError as exc:
        print(f"hdfs-events-agent sync: {exc}", file=sys.stderr)
        return 1
    from onprem_agent.sync.state import SyncState

    state = SyncState(sync.table, config.cluster, sync.destination)
    if args.action == "status":
        print_status(state.status())
        return 0
    logging.basicConfig(level=getattr(args, "log_level", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = _hadoop(live, threading.Event())
    if args.action == "verify":
        return verify(client, sync, args.prefix, max_lines=args.max_lines)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        _serve(config, live, sync, state, client, stop)
    except Exception as exc:
        log.exception("sync failed")
        print(f"hdfs-events-agent sync: {exc}", file=sys.stderr)
        return 1
    return 0


def _hadoop(live: Any, stop: threading.Event) -> Any:
    from onprem_agent.live.hadoop import HadoopClient, KerberosLogin, hadoop_configuration
    from onprem_agent.live.jvm import resolve_classpath, start_jvm
    from onprem_agent.sync.hdfs_files import CHECKSUM_CONF

    start_jvm(resolve_classpath(explicit=live.hdfs.classpath, conf_dir=live.hdfs.conf_dir),
              max_heap=live.hdfs.max_heap)
    conf = hadoop_configuration(CHECKSUM_CONF)
    if live.kerberos.enabled:
        KerberosLogin(live.kerberos.principal, live.kerberos.keytab, conf,
                      interval_s=live.kerberos.relogin_interval_s).keep_fresh(stop)
    return HadoopClient(live.hdfs.uri, conf)


def _serve(config: Any, live: Any, sync: Any, state: Any, client: Any,
           stop: threading.Event) -> None:
    from onprem_agent.live.convert import JavaBatchConverter
    from onprem_agent.live.snapshot import namespace_snapshot
    from onprem_agent.live.stream import LiveSource
    from onprem_agent.opsmetrics import Alerts, put_metrics
    from onprem_agent.sync.hdfs_files import HdfsFiles
    from onprem_agent.sync.replica import S3Replica
    from onprem_agent.sync.replicator import (
        Replicator,
        WindowFigures,
        Windows,
        replicate,
        sync_metrics,
    )

    alerts = Alerts(sync.alert_topic_arn)
    replica = S3Replica(sync)
    aborted = replica.abort_open_uploads()
    if aborted:
        log.warning("aborted %d multipart upload(s) left open under %s (an earlier run was "
                    "killed mid-copy)", aborted, sync.destination)

    def on_park(path: str, reason: str) -> None:
        alerts.send(f"hdfs-events {config.cluster}: sync parked a path",
                    f"{path}: {reason}", {"cluster": config.cluster, "path": path[:200]})

    def on_window(figures: WindowFigures) -> None:
        try:
            put_metrics(sync_metrics(config.cluster, figures))
        except Exception as exc:  # the replica is what matters; the next window tries again
            log.warning("sync metrics not sent: %s", exc)

    replicator = Replicator(sync, hdfs=HdfsFiles(client.file_system()), lister=client.lister(),
                            replica=replica, state=state, current_txid=client.current_txid,
                            on_park=on_park,
                            on_window=on_window if live.metrics.heartbeat_interval_s else None)
    windows = Windows(replicator, sync)
    if live.metrics.heartbeat_interval_s:
        threading.Thread(target=_publish_progress, name="sync-metrics", daemon=True,
                         args=(config.cluster, windows, live.metrics.heartbeat_interval_s,
                               stop)).start()
    source = LiveSource(
        client.stream_source(), JavaBatchConverter(config.cluster), cluster=config.cluster,
        start_txid=replicator.resume_after, stop=stop, gap_policy="snapshot",
        snapshot=namespace_snapshot(config.cluster, client.lister(), sync.paths,
                                    workers=live.inotify.snapshot_workers),
        poll_timeout_ms=live.inotify.poll_timeout_ms,
        max_batches_per_drain=live.inotify.max_batches_per_drain,
        roll_edits_every_txids=live.inotify.roll_edits_every_txids,
        on_idle=windows.flush_if_due)
    log.info("replicating %s to %s from txid %s", ", ".join(sync.paths), sync.destination,
             replicator.resume_after if replicator.resume_after is not None else "<listing>")
    replicate(iter(source), windows, stop)


def _publish_progress(cluster: str, windows: Any, interval_s: float,
                      stop: threading.Event) -> None:
    """The lag in bytes and seconds every interval, also in the middle of an hour-long window
    (the per-window figures come only when a window ends)."""
    import time

    import boto3

    from onprem_agent.opsmetrics import put_metrics
    from onprem_agent.sync.replicator import progress_metrics

    client = boto3.client("cloudwatch")
    while not stop.wait(interval_s):
        try:
            put_metrics(progress_metrics(cluster, windows, time.time()), client)
        except Exception as exc:  # the replica is what matters; the next beat tries again
            log.warning("sync progress metrics not sent: %s", exc)


def print_status(status: Any, out: Any = None) -> None:
    out = out or sys.stdout
    print(f"replicated txid: {status.txid if status.txid is not None else '-'}"
          f" (saved {status.saved_at or '-'})", file=out)
    if status.totals:
        print("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(status.totals.items())),
              file=out)
    w = status.window
    print("running window: " + (f"txids {w['first_txid']}..{w['last_txid']}, {w['steps']} steps, "
                                f"since {w['started_at']}" if w else "none"), file=out)
    print(f"pending paths: {len(status.pending)}", file=out)
    for path, kind in sorted(status.pending.items()):
        print(f"  {kind:6} {path}", file=out)
    print(f"parked paths: {len(status.parked)}", file=out)
    for p in status.parked:
        print(f"  {p.path}  (txid {p.txid}, {p.attempts} attempts, {p.parked_at}): {p.reason}",
              file=out)


def verify(client: Any, sync: Any, prefixes: list[str], *, max_lines: int = 200,
           out: Any = None) -> int:
    from onprem_agent.live.snapshot import walk
    from onprem_agent.sync.encryption import in_zone
    from onprem_agent.sync.hdfs_files import HdfsFiles
    from onprem_agent.sync.plan import FileState, Scope, reconcile
    from onprem_agent.sync.replica import S3Replica

    out = out or sys.stdout
    scope = Scope.of(sync.paths, sync.ignore_patterns)
    hdfs, replica, total = HdfsFiles(client.file_system()), S3Replica(sync), 0
    for prefix in prefixes:
        files = {e.path: e for e in walk(client.lister(), [prefix])
                 if hdfs.is_file(e) and scope.covered.passes(e.path)}
        listed = {p: FileState(size=e.size, mtime=e.mtime, owner=e.owner, group=e.group,
                               perms=e.perms, replication=e.replication)
                  for p, e in files.items()}
        drift = reconcile(listed, replica.states_under(prefix))
        lines = [*(f"missing   {p}" for p in drift.missing),
                 *(f"stale     {p}" for p in drift.stale),
                 *(f"metadata  {p}" for p in drift.metadata),
                 *(f"extra     {p}" for p in drift.extra)]
        checked = set(listed) - set(drift.missing) - set(drift.stale)
        # HDFS's checksum of a file in an encryption zone covers its ciphertext (encryption.py):
        # only a read of the whole file could compare it, so size and mtime stand for it.
        zoned = {p for p in checked if in_zone(files[p])}
        checked -= zoned
        for path in sorted(checked):
            have, want = replica.head(path), hdfs.checksum(path)
            stored = None if have is None else have.crc32c
            if stored != want.value:
                shown = "-" if stored is None else f"{stored:08x}"
                lines.append(f"checksum  {path}: HDFS {want.algorithm} {want.value:08x}, "
                             f"S3 CRC32C {shown}")
        print(f"{prefix}: {len(listed)} files in HDFS, {len(checked)} checksums compared, "
              f"{len(lines)} differ" + (f" ({len(zoned)} in encryption zones: size and mtime "
                                        "compared)" if zoned else ""), file=out)
        for line in lines[:max_lines]:
            print("  " + line, file=out)
        total += len(lines)
    return 1 if total else 0
