"""`hdfs-events-agent run --config agent.toml`: ship live HDFS inotify events to SQS.

Exit codes: 0 stopped by SIGTERM/SIGINT; 1 a setup or runtime error (message on stderr);
3 purged edits with gap_policy = "stop" (an alert went out; with "fsimage" the index is
repaired from the NameNode's image and the agent ships on: live/agent.py, ship_repairing_gaps).
systemd's Restart=always brings the agent back after 1; after 3 an operator must decide (see
docs/edge-node.md). A NameNode that stops, restarts or fails over is not an error: the agent
waits for it and reads on (onprem_agent/live/reconnect.py), re-logging in from its keytab
before each new attempt.
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
from pathlib import Path

EXIT_GAP = 3
log = logging.getLogger("onprem_agent.run")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--cluster", default=None, help="override [cluster]")
    parser.add_argument("--dry-run", action="store_true",
                        help="read and pack, acknowledge without sending (no-op sender)")
    parser.add_argument("--log-level", default="INFO")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.config import load_config
    from onprem_agent.live.settings import load_live_settings

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        settings = load_live_settings(config)
        if settings.hdfs.uri is None:
            raise ConfigError(f"{config.path.name}: [hdfs] uri: required for `run`")
    except ConfigError as exc:
        print(f"hdfs-events-agent run: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from onprem_agent.live.hadoop import KerberosError, java_error_line, not_superuser
    from onprem_agent.live.jvm import JvmError

    try:
        return _run(config, settings, stop, dry_run=args.dry_run)
    except (JvmError, KerberosError) as exc:
        # A setup an operator must fix: one line that says what and where, no stack trace
        # (systemd's restarts would repeat it every few seconds).
        print(f"hdfs-events-agent run: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        refusal = not_superuser(settings.hdfs.uri, exc)  # from opening the stream or a poll
        if refusal is not None:
            print(f"hdfs-events-agent run: {refusal}", file=sys.stderr)
            return 1
        log.exception("agent failed")
        print(f"hdfs-events-agent run: {java_error_line(exc)}", file=sys.stderr)
        return 1


def _run(config, settings, stop: threading.Event, *, dry_run: bool) -> int:  # type: ignore[no-untyped-def]
    from onprem_agent.checkpoint import open_checkpoint_store
    from onprem_agent.lease import Lease, LeaseKeeper
    from onprem_agent.live.agent import (
        AgentState,
        gap_reporter,
        readings,
        run_term,
        serve,
        ship_repairing_gaps,
    )
    from onprem_agent.live.convert import JavaBatchConverter
    from onprem_agent.live.hadoop import HadoopClient, KerberosLogin, hadoop_configuration
    from onprem_agent.live.image_start import ImageStartStopped, image_start_for
    from onprem_agent.live.jvm import resolve_classpath, start_jvm
    from onprem_agent.live.stream import InotifyGapError, LiveStats
    from onprem_agent.opsmetrics import Alerts, Heartbeat, start_prometheus
    from onprem_agent.sender import NoopSender, SqsSender

    classpath = resolve_classpath(explicit=settings.hdfs.classpath,
                                  conf_dir=settings.hdfs.conf_dir)
    log.info("JVM classpath: %s", classpath.describe())
    start_jvm(classpath, max_heap=settings.hdfs.max_heap)
    conf = hadoop_configuration()
    kerberos = None
    if settings.kerberos.enabled:
        kerberos = KerberosLogin(settings.kerberos.principal, settings.kerberos.keytab, conf,
                                 interval_s=settings.kerberos.relogin_interval_s)
        kerberos.keep_fresh(stop)
    client = HadoopClient(settings.hdfs.uri, conf)
    converter = JavaBatchConverter(config.cluster)
    state = AgentState(stats=LiveStats())
    agent_readings = readings(state)
    if settings.metrics.prometheus_port:
        start_prometheus(config.cluster, agent_readings, port=settings.metrics.prometheus_port,
                         addr=settings.metrics.prometheus_addr)
    heartbeat = None
    if settings.metrics.heartbeat_interval_s:
        heartbeat = Heartbeat(config.cluster, agent_readings,
                              interval_s=settings.metrics.heartbeat_interval_s).start()
    alerts = Alerts(settings.inotify.alert_topic_arn)
    # What the start made (modules, the JVM's classes as Python sees them, clients) lives as
    # long as the agent: kept out of every later full collection of Python's garbage
    # collector, each of which walks all it tracks. At the NameNode's full speed those paused
    # the agent ~90 ms every ~2.3 s before, ~44 ms after, in its NameNode -> SQS time
    # (bench.chain_speed, docs/bench.md session 36).
    gc.freeze()
    lease = None
    if settings.lease.enabled:
        lease = Lease(settings.lease.table, config.cluster, duration_s=settings.lease.duration_s)

    inotify = settings.inotify
    uses_image = "fsimage" in (inotify.first_start, inotify.gap_policy)

    def term(keeper: LeaseKeeper | None) -> None:
        checkpoint = open_checkpoint_store(config)
        images = image_start_for(config, settings, client, stop) if uses_image else None

        def ship(list_gap_at: int | None) -> None:
            sender = NoopSender() if dry_run else SqsSender.from_config(config)
            run_term(config, settings, state, stream_source=client.stream_source(),
                     converter=converter, lister=client.lister(), sender=sender,
                     checkpoint=checkpoint, stop=stop,
                     on_gap=gap_reporter(config.cluster, alerts), keeper=keeper,
                     before_reconnect=kerberos.relogin_now if kerberos is not None else None,
                     list_gap_at=list_gap_at)

        first_start = (images.run if images is not None and inotify.first_start == "fsimage"
                       else None)
        repair = (images.repair if images is not None and inotify.gap_policy == "fsimage"
                  else None)
        try:
            if first_start is not None and checkpoint.load() is None:
                # The index is written from the image through T: the stream goes on at T+1
                # as after any restart (None: the edits after the image are purged, list).
                txid = first_start()
                if txid is not None:
                    checkpoint.save(txid)
            ship_repairing_gaps(ship, repair=repair, checkpoint=checkpoint, stop=stop)
        except ImageStartStopped:
            return  # SIGTERM while waiting for the index: `serve` ends on `stop`

    try:
        serve(lease, stop, renew_interval_s=settings.lease.renew_interval_s, term=term)
    except InotifyGapError as exc:
        # The GAP record went out with the pipeline's shutdown; the checkpoint stays below
        # it, so a restart meets the same gap (and the same GAP key) again.
        alerts.send(f"hdfs-events {config.cluster}: agent stopped", str(exc))
        print(f"hdfs-events-agent run: {exc}", file=sys.stderr)
        return EXIT_GAP
    finally:
        if heartbeat is not None:
            heartbeat.stop()
    return 0
