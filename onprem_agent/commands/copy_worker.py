"""`hdfs-events-agent copy-worker --config agent.toml`: copy S3 data into HDFS on request.

Reads the [copy] section of the agent config, long-polls the copy-request queue and runs
distcp for each valid, allowed request. SIGTERM or Ctrl-C stops polling; copies in flight run
to their end (their heartbeats keep their messages) before the process exits.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from onprem_agent.agent_toml import ConfigError
from onprem_agent.config import load_config
from onprem_agent.copy_worker.settings import COPY


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="agent config (TOML) with a [copy] section")
    parser.add_argument("--exit-when-idle", action="store_true",
                        help="exit once a poll finds no request and no copy is running "
                             "(for cron-style runs)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_config(args.config).read(COPY)
    except ConfigError as exc:
        print(f"hdfs-events-agent copy-worker: {exc}", file=sys.stderr)
        return 2

    import boto3  # here, not at import: `--help` and config errors need no AWS SDK

    from onprem_agent.copy_worker.distcp import DistcpRunner
    from onprem_agent.copy_worker.listing import HadoopShellLister
    from onprem_agent.copy_worker.outcome import OutcomePublisher
    from onprem_agent.copy_worker.transfers import TransfersTable
    from onprem_agent.copy_worker.worker import CopyWorker

    worker = CopyWorker(
        settings,
        sqs=boto3.client("sqs"),
        s3=boto3.client("s3"),
        transfers=TransfersTable(boto3.client("dynamodb"), settings.transfers_table,
                                 cluster=settings.cluster,
                                 retention_days=settings.retention_days),
        publisher=OutcomePublisher(sns=boto3.client("sns"),
                                   cloudwatch=boto3.client("cloudwatch"),
                                   cluster=settings.cluster),
        lister=HadoopShellLister(settings.list_command,
                                 remove_command=settings.remove_command),
        run_distcp=DistcpRunner(timeout_s=settings.copy_timeout_s),
    )
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        logging.getLogger(__name__).info("%s: finishing copies in flight, then exiting",
                                         signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        handled = worker.run(stop, exit_when_idle=args.exit_when_idle)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    logging.getLogger(__name__).info("copy worker stopped after %d message(s)", handled)
    return 0
