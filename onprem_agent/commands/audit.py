"""`hdfs-events-agent audit run --config agent.toml`: the NameNode's audit log ([audit] in
agent.toml) shipped to the lake, on each NameNode host (systemd unit hdfs-events-audit;
docs/agent.md "Audit log"). No JVM: it reads the local files log4j writes.

Exit 0 on SIGTERM/SIGINT after writing what it holds and saving its position; 1 on a setup or
runtime error.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

log = logging.getLogger("onprem_agent.audit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("run", help="tail the audit log and ship it until stopped")
    p.add_argument("--config", type=Path, required=True, help="agent.toml")
    p.add_argument("--cluster", default=None, help="override [cluster]")
    p.add_argument("--log-level", default="INFO")


def run(args: argparse.Namespace) -> int:
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.audit.position import PositionError, load_position
    from onprem_agent.audit.settings import AUDIT
    from onprem_agent.config import load_config

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        settings = config.read(AUDIT)
        position = load_position(settings.state_file)
    except (ConfigError, PositionError) as exc:
        print(f"hdfs-events-agent audit: {exc}", file=sys.stderr)
        return 1
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import boto3
    from botocore.config import Config

    from onprem_agent.audit.logfiles import AuditTailer, RotatingLog
    from onprem_agent.audit.metrics import AuditCounters, AuditMetricsPublisher
    from onprem_agent.audit.shipper import AuditShipper, LakeWriter

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    retries = Config(retries={"mode": "standard", "max_attempts": 5})
    counters = AuditCounters()
    publisher = AuditMetricsPublisher(config.cluster, counters,
                                      interval_s=settings.metrics_interval_s,
                                      client=boto3.client("cloudwatch", config=retries))
    tailer = AuditTailer(RotatingLog(settings.log_dir, settings.file), position)
    shipper = AuditShipper(config.cluster, settings, tailer,
                           LakeWriter(settings.bucket, boto3.client("s3", config=retries)),
                           counters, stop, publish=publisher)
    log.info("audit: tailing %s/%s from %s as host %s", settings.log_dir, settings.file,
             position or "the oldest file", settings.host)
    try:
        shipper.run()
    except Exception as exc:
        log.exception("audit failed")
        print(f"hdfs-events-agent audit: {exc}", file=sys.stderr)
        return 1
    finally:
        tailer.close()
    if settings.metrics_interval_s > 0:
        publisher.put_now()
    log.info("audit: stopped at %s (%d lines shipped, %d unparsed)", tailer.position,
             counters.total_shipped, counters.total_unparsed)
    return 0
