"""`hdfs-events-agent sync run` as an edge node runs it: its own process and JVM, agent.toml with
a [sync] section, AWS through the standard environment (moto server in tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import boto3

from hdfs_events import names
from tests.kit.live_agent import AGENT, AgentProcess, write_agent_config

SYNC_TABLE = "hdfs-events-sync"


def create_sync_table(name: str = SYNC_TABLE) -> str:
    """The sync state table, keyed as the storage stack creates it."""
    boto3.client("dynamodb").create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": names.SYNC_PK, "AttributeType": "S"},
                              {"AttributeName": names.SYNC_SK, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": names.SYNC_PK, "KeyType": "HASH"},
                   {"AttributeName": names.SYNC_SK, "KeyType": "RANGE"}])
    return name


def write_sync_config(directory: Path, *, cluster: str, uri: str, conf_dir: Path,
                      destination: str, paths: list[str], sync_extra: str = "") -> Path:
    """agent.toml for `sync` (the [sqs] queue is never used by it, but the file format needs
    one) with a short poll and the given [sync] section."""
    sync = (f'[sync]\ndestination = "{destination}"\ntable = "{SYNC_TABLE}"\n'
            f"paths = [{', '.join(repr(p).replace(chr(39), chr(34)) for p in paths)}]\n"
            + sync_extra)
    return write_agent_config(directory, cluster=cluster,
                              queue_url="https://sqs.eu-west-1.amazonaws.com/1/unused.fifo",
                              uri=uri, conf_dir=conf_dir, extra=sync)


def _checkpoint_item(cluster: str, destination: str) -> dict:
    return boto3.client("dynamodb").get_item(
        TableName=SYNC_TABLE, ConsistentRead=True,
        Key={names.SYNC_PK: {"S": cluster},
             names.SYNC_SK: {"S": f"{destination}|checkpoint"}}).get("Item") or {}


def replicated_txid(cluster: str, destination: str) -> int | None:
    item = _checkpoint_item(cluster, destination)
    return int(item["txid"]["N"]) if "txid" in item else None


def sync_totals(cluster: str, destination: str) -> dict[str, int]:
    item = _checkpoint_item(cluster, destination)
    return {k: int(v["N"]) for k, v in item.items() if "N" in v and k != "txid"}


def start_sync(config: Path) -> AgentProcess:
    return AgentProcess.start(config, command=("sync", "run"), log_suffix=".sync.log")


def wait_for_replication(sync: AgentProcess, cluster: str, destination: str, txid: int,
                         timeout_s: float = 120) -> None:
    sync.wait_until(lambda: replicated_txid(cluster, destination), txid, "replicated txid",
                    timeout_s)


def sync_command(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT), "sync", *args, "--config", str(config)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
