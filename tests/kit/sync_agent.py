"""`hdfs-events-agent sync run` as an edge node runs it: its own process and JVM, agent.toml with
a [sync] section, AWS through the standard environment (moto server in tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import boto3

from hdfs_events import names
from tests.kit.live_agent import AGENT, write_agent_config

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


def replicated_txid(cluster: str, destination: str) -> int | None:
    item = boto3.client("dynamodb").get_item(
        TableName=SYNC_TABLE, ConsistentRead=True,
        Key={names.SYNC_PK: {"S": cluster},
             names.SYNC_SK: {"S": f"{destination}|checkpoint"}}).get("Item")
    return int(item["txid"]["N"]) if item and "txid" in item else None


def sync_totals(cluster: str, destination: str) -> dict[str, int]:
    item = boto3.client("dynamodb").get_item(
        TableName=SYNC_TABLE, ConsistentRead=True,
        Key={names.SYNC_PK: {"S": cluster},
             names.SYNC_SK: {"S": f"{destination}|checkpoint"}}).get("Item") or {}
    return {k: int(v["N"]) for k, v in item.items() if "N" in v and k != "txid"}


@dataclass
class SyncProcess:
    config: Path
    log: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, config: Path) -> SyncProcess:
        log = config.with_suffix(".sync.log")
        with log.open("ab") as out:
            process = subprocess.Popen([str(AGENT), "sync", "run", "--config", str(config)],
                                       stdout=out, stderr=out, env=dict(os.environ))
        return cls(config, log, process)

    def wait_for_txid(self, cluster: str, destination: str, txid: int,
                      timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while (replicated_txid(cluster, destination) or -1) < txid:
            if self.process.poll() is not None:
                raise AssertionError(f"sync exited {self.process.returncode} before txid "
                                     f"{txid}: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"sync never reached txid {txid}: {self.log_tail()}")
            time.sleep(0.1)

    def stop(self, timeout_s: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def sync_command(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT), "sync", *args, "--config", str(config)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
