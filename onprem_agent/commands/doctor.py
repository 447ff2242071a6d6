"""`hdfs-events-agent doctor --config agent.toml`: one line per check, what to do on failure,
exit 1 if any check failed. Checks in order, a check that needs an earlier one is skipped:

  config       the file parses and every section is valid
  credentials  STS GetCallerIdentity through the standard AWS chain
  queue        the FIFO queue answers GetQueueAttributes
  state        the agent-state table answers DescribeTable (dynamodb checkpoint or lease)
  jvm          a JVM starts with the Hadoop client on the classpath
  kerberos     the keytab is private to the agent's user and the login works
  namenode     the NameNode answers (HdfsAdmin.getInotifyEventStream); when it is down,
               restarting or standing by, the line says so and what a running agent does
  superuser    inotify is allowed: it needs HDFS superuser
"""

from __future__ import annotations

import argparse
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Doctor must answer quickly: one connection attempt, short timeouts (Hadoop's defaults retry
# a refused connection 10 times, one second apart, and more for a timeout).
_FAST_FAIL = {"ipc.client.connect.max.retries": "1",
              "ipc.client.connect.max.retries.on.timeouts": "1",
              "ipc.client.connect.timeout": "5000",
              "ipc.client.connect.retry.interval": "200",
              "dfs.client.failover.max.attempts": "1",
              "dfs.client.retry.policy.enabled": "false"}


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool | None  # None: skipped
    detail: str

    def line(self) -> str:
        mark = {True: "OK  ", False: "FAIL", None: "SKIP"}[self.ok]
        return f"{mark} {self.name:<11} {self.detail}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--cluster", default=None, help="override [cluster]")


def run(args: argparse.Namespace) -> int:
    checks = diagnose(args.config, {"cluster": args.cluster})
    for check in checks:
        print(check.line(), flush=True)
    return 1 if any(c.ok is False for c in checks) else 0


def diagnose(path: Path, overrides: dict[str, Any] | None = None,
             report: Callable[[Check], None] | None = None) -> list[Check]:
    out: list[Check] = []

    def add(name: str, ok: bool | None, detail: str) -> bool:
        check = Check(name, ok, detail)
        out.append(check)
        if report is not None:
            report(check)
        return bool(ok)

    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.config import load_config
    from onprem_agent.live.settings import load_live_settings

    try:
        config = load_config(path, overrides)
        settings = load_live_settings(config)
    except ConfigError as exc:
        add("config", False, f"{exc} -> fix the file and run doctor again")
        return out
    add("config", True, f"{path} (cluster {config.cluster})")
    _aws_checks(config, settings, add)
    _hadoop_checks(settings, add)
    return out


def _aws_checks(config: Any, settings: Any, add: Callable[[str, bool | None, str], bool]) -> None:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        identity = boto3.client("sts").get_caller_identity()
        add("credentials", True, f"AWS identity {identity['Arn']}")
    except (BotoCoreError, ClientError) as exc:
        add("credentials", False, f"{exc} -> set up the standard AWS chain for this user "
                                  "(AWS_PROFILE, IAM Roles Anywhere, or instance role)")
        add("queue", None, "needs credentials")
        return
    try:
        boto3.client("sqs").get_queue_attributes(QueueUrl=config.sqs.queue_url,
                                                 AttributeNames=["FifoQueue"])
        add("queue", True, config.sqs.queue_url)
    except (BotoCoreError, ClientError) as exc:
        add("queue", False, f"{config.sqs.queue_url}: {exc} -> check [sqs] queue_url, the "
                            "region (AWS_REGION) and sqs:GetQueueAttributes in the policy")
    table = settings.lease.table if settings.lease.enabled else config.checkpoint.table
    if config.checkpoint.store == "dynamodb" or settings.lease.enabled:
        try:
            boto3.client("dynamodb").describe_table(TableName=table)
            add("state", True, f"agent-state table {table}")
        except (BotoCoreError, ClientError) as exc:
            add("state", False, f"table {table}: {exc} -> check [checkpoint] table and "
                                "dynamodb:DescribeTable/GetItem/UpdateItem in the policy")


def _hadoop_checks(settings: Any, add: Callable[[str, bool | None, str], bool]) -> None:
    from onprem_agent.live.jvm import JvmError, java_version, resolve_classpath, start_jvm

    try:
        classpath = resolve_classpath(explicit=settings.hdfs.classpath,
                                      conf_dir=settings.hdfs.conf_dir)
        start_jvm(classpath, max_heap=settings.hdfs.max_heap)
        import jpype

        jpype.JClass("org.apache.hadoop.hdfs.client.HdfsAdmin")
        add("jvm", True, f"Java {java_version()}, Hadoop client from {classpath.describe()}")
    except (JvmError, ImportError, TypeError) as exc:
        hint = "" if " -> " in str(exc) else " -> install Java 17 and a Hadoop client (or pyspark)"
        add("jvm", False, f"{exc}{hint}")
        add("namenode", None, "needs the JVM")
        return
    from onprem_agent.live.hadoop import hadoop_configuration

    conf = hadoop_configuration(_FAST_FAIL)
    if settings.kerberos.enabled and not _kerberos(settings, conf, add):
        add("namenode", None, "needs a Kerberos login")
        return
    if not settings.hdfs.uri:
        add("namenode", False, "[hdfs] uri is not set -> set it to hdfs://<nameservice>")
        return
    _namenode(settings.hdfs, conf, add)


def _kerberos(settings: Any, conf: Any, add: Callable[[str, bool | None, str], bool]) -> bool:
    from onprem_agent.live.hadoop import KerberosError, KerberosLogin

    keytab: Path = settings.kerberos.keytab
    try:
        mode = keytab.stat().st_mode
    except OSError as exc:
        return add("kerberos", False, f"keytab {keytab}: {exc.strerror} -> check [kerberos] "
                                      "keytab")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return add("kerberos", False, f"keytab {keytab} is readable by group or others "
                                      f"({stat.filemode(mode)}) -> chmod 600 {keytab}")
    try:
        login = KerberosLogin(settings.kerberos.principal, keytab, conf)
    except KerberosError as exc:
        return add("kerberos", False, str(exc))
    return add("kerberos", True, f"logged in as {login.principal} from {keytab}, "
                                 f"{_ticket_left(login.ticket_end_ms)}")


def _namenode(hdfs: Any, conf: Any, add: Callable[[str, bool | None, str], bool]) -> None:
    from onprem_agent.live.hadoop import HadoopClient, NotSuperuserError, java_error_line
    from onprem_agent.live.reconnect import is_retriable

    uri = hdfs.uri
    try:
        client = HadoopClient(uri, conf)
        client.open_stream(None)
    except NotSuperuserError as exc:
        add("namenode", True, f"{uri} answered")
        add("superuser", False, str(exc))
        return
    except Exception as exc:  # any Java exception: one line, never the NameNode's stack
        if is_retriable(exc):  # the same judgement the running agent makes (reconnect.py)
            add("namenode", False, f"NameNode {uri} unavailable ({java_error_line(exc)}): a "
                                   "running agent waits for it, reconnecting every "
                                   f"{hdfs.reconnect_initial_s}-{hdfs.reconnect_max_s} s, and "
                                   "resumes after the last txid it read -> check that the "
                                   "NameNode runs and has finished starting (`hdfs haadmin "
                                   "-getAllServiceState`, `hdfs dfsadmin -safemode get`), and "
                                   "[hdfs] uri if it never answers")
            return
        add("namenode", False, f"{uri}: {java_error_line(exc)} -> check [hdfs] uri, "
                               "HADOOP_CONF_DIR (HA nameservices), the network path and that "
                               "the NameNode runs")
        return
    add("namenode", True, f"{uri} answered")
    add("superuser", True, "inotify stream opened")


def _ticket_left(end_ms: int | None) -> str:
    if end_ms is None:
        return "no ticket-granting ticket found"
    return f"ticket ends in {max(0, round(end_ms / 1000 - time.time()))} s"

