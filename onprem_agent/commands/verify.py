"""`hdfs-events-agent verify --config agent.toml --prefix /path`: compare an HDFS listing with
the DynamoDB namespace index, print the drift, publish the IndexDrift metric, send one message
per drifting path to [verify] drift_queue_url when set (onprem_agent/drift_alerts.py), and
alert when more than [verify] drift_threshold entries differ (exit 1 then, so cron notices
too)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hdfs_events import names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--prefix", action="append", required=True,
                        help="HDFS directory to check (repeatable)")
    parser.add_argument("--cluster", default=None, help="override [cluster]")
    parser.add_argument("--max-lines", type=int, default=200,
                        help="drift lines printed per prefix (all are counted)")


def run(args: argparse.Namespace) -> int:
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.config import load_config
    from onprem_agent.live.settings import load_live_settings

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        settings = load_live_settings(config)
        for key, value in (("[hdfs] uri", settings.hdfs.uri),
                           ("[verify] index_table", settings.verify.index_table)):
            if not value:
                raise ConfigError(f"{config.path.name}: {key}: required for `verify`")
    except ConfigError as exc:
        print(f"hdfs-events-agent verify: {exc}", file=sys.stderr)
        return 2
    from onprem_agent.live.hadoop import HadoopClient, KerberosLogin, hadoop_configuration
    from onprem_agent.live.jvm import resolve_classpath, start_jvm
    from onprem_agent.verify import DynamoIndexReader

    start_jvm(resolve_classpath(explicit=settings.hdfs.classpath,
                                conf_dir=settings.hdfs.conf_dir), max_heap=settings.hdfs.max_heap)
    conf = hadoop_configuration()
    if settings.kerberos.enabled:
        KerberosLogin(settings.kerberos.principal, settings.kerberos.keytab, conf)
    client = HadoopClient(settings.hdfs.uri, conf)
    alerts = None
    if settings.verify.drift_queue_url:
        from onprem_agent.drift_alerts import DriftAlertSender, new_run, sqs_client

        alerts = DriftAlertSender(
            settings.verify.drift_queue_url, new_run(config.cluster),
            sqs_client(config.sending.retry_mode, config.sending.max_attempts),
            max_paths=settings.verify.alert_max_paths)
    return check(config.cluster, args.prefix, lister=client.lister(),
                 reader=DynamoIndexReader(settings.verify.index_table),
                 threshold=settings.verify.drift_threshold,
                 topic_arn=settings.verify.alert_topic_arn, workers=settings.verify.workers,
                 max_lines=args.max_lines, drift_alerts=alerts)


def check(cluster: str, prefixes: list[str], *, lister: Any, reader: Any, threshold: int,
          topic_arn: str | None, workers: int = 8, max_lines: int = 200,
          cloudwatch: Any = None, sns: Any = None, out: Any = None,
          drift_alerts: Any = None) -> int:
    from onprem_agent.opsmetrics import Alerts, cloudwatch_datum, put_metrics
    from onprem_agent.verify import verify_prefix

    out = out or sys.stdout
    total, summary = 0, []
    for prefix in prefixes:
        on_drift = None if drift_alerts is None else drift_alerts.on_drift(prefix)
        report = verify_prefix(cluster, prefix, lister, reader, workers=workers,
                               on_drift=on_drift)
        lines = report.lines()
        print("\n".join(lines[:max_lines + 1]), file=out)
        if report.count > max_lines:  # the report keeps the first drifts, counts them all
            print(f"... and {report.count - min(max_lines, len(lines) - 1)} more", file=out)
        total += report.count
        summary.append(lines[0])
    alerts_failed = drift_alerts is not None and not _close_alerts(drift_alerts, out)
    put_metrics([cloudwatch_datum(cluster, names.METRIC_INDEX_DRIFT, total)], cloudwatch)
    if total > threshold:
        Alerts(topic_arn, sns).send(
            f"hdfs-events {cluster}: index drift {total}",
            "\n".join([*summary, f"{total} entries differ (threshold {threshold})."]),
            {"cluster": cluster})
        return 1
    return 1 if alerts_failed else 0


def _close_alerts(drift_alerts: Any, out: Any) -> bool:
    from onprem_agent.drift_alerts import DriftAlertSendError

    try:
        summary = drift_alerts.close()
    except DriftAlertSendError as exc:
        print(f"hdfs-events-agent verify: drift alerts: {exc}", file=sys.stderr)
        return False
    more = f", and a summary of {summary.more} more" if summary else ""
    print(f"drift alerts: {drift_alerts.sent} sent to {drift_alerts.queue_url}{more}", file=out)
    return True
