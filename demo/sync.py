"""The demo's live replication: `hdfs-events-agent sync run` beside the live agent, keeping one
prefix of the workload's tree in step in S3, then `sync verify` (HDFS against S3, checksums
included) and the lag the sync published to CloudWatch (SyncLagSeconds per window).

The destination is the one cdk.json names for the demo cluster (`sync_destinations` of the
`local` environment): the customer's bucket, which the CDK app grants but does not create, so
the demo creates it in moto as a customer would. The state table is the storage stack's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hdfs_events import names
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.local_chain import REPO, Chain

ROOT = "/data/finance"  # ~250 files of the generated workload, written, renamed and deleted
HEARTBEAT_S = 5


def destination(cluster: str, env: str = "local") -> str:
    """The sync destination cdk.json gives `cluster` (the first, when it names several)."""
    context = json.loads((REPO / "cdk.json").read_text())["context"]
    for entry in context["environments"][env].get("sync_destinations", []):
        name, _, url = entry.partition("=")
        if name == cluster:
            return url
    raise SystemExit(f"cdk.json: environments.{env}.sync_destinations names no destination "
                     f"for cluster {cluster!r}")


@dataclass(frozen=True, slots=True)
class Replica:
    destination: str
    root: str
    objects: int
    bytes: int
    verify: str  # `sync verify`'s summary line
    drift: int
    windows: int  # SyncLagSeconds samples: one per window, and per heartbeat while events wait
    lag_avg_s: float | None
    lag_max_s: float | None

    def figures(self) -> dict[str, str]:
        lag = ("-" if self.lag_max_s is None else
               f"{self.lag_avg_s:.1f} s / {self.lag_max_s:.1f} s")
        return {
            f"Replicated {self.root} to": self.destination,
            "Replica objects (bytes)": f"{self.objects:,} ({self.bytes:,})",
            "Replica drift (`sync verify`, CRC32C)": f"{self.drift}",
            f"Replication lag avg / max ({self.windows} samples)": lag,
        }


class DemoSync:
    def __init__(self, chain: Chain, hdfs: HdfsCluster, root: str = ROOT) -> None:
        self.chain, self.hdfs, self.root = chain, hdfs, root
        self.destination = destination(chain.cluster)
        self.bucket, _, prefix = self.destination[5:].partition("/")
        self.prefix = prefix.strip("/") + "/"
        self.log = chain.work / "sync.log"
        self.config = self._config()
        self.started = datetime.now(UTC)
        self.process: subprocess.Popen[bytes] | None = None

    def _config(self) -> Path:
        base = self.chain.agent_config("sync", hdfs_uri=self.hdfs.uri, conf_dir=self.hdfs.conf_dir)
        text = base.read_text().replace("heartbeat_interval_s = 0",
                                        f"heartbeat_interval_s = {HEARTBEAT_S}")
        text += (f'\n[sync]\ndestination = "{self.destination}"\n'
                 f'table = "{self.chain.outputs["SyncTableName"]}"\npaths = ["{self.root}"]\n'
                 'window_ms = 1000\n')
        base.write_text(text)
        return base

    def start(self) -> DemoSync:
        self.chain.client("s3").create_bucket(
            Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "onprem_agent.cli", "sync", "run", "--config",
                 str(self.config)], stdout=out, stderr=out, cwd=REPO)
        return self

    def _cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "onprem_agent.cli", "sync", *args,
                               "--config", str(self.config)], capture_output=True, text=True,
                              cwd=REPO, timeout=600, check=False)

    def _replicated_txid(self) -> int | None:
        status = self._cli("status").stdout
        found = re.search(r"replicated txid: (\d+)", status)
        return int(found.group(1)) if found else None

    def finish(self, timeout_s: float = 300) -> Replica:
        """Waits until the sync has replicated everything the NameNode wrote, stops it (SIGTERM),
        verifies the prefix and reads the lag it published."""
        assert self.process is not None
        self.hdfs.run([["mkdirs", "/markers/sync-done"]])
        target, deadline = self.hdfs.txid(), time.monotonic() + timeout_s
        while (self._replicated_txid() or -1) < target:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"sync did not reach txid {target}: see {self.log}")
            time.sleep(1)
        self.process.terminate()
        if self.process.wait(60) != 0:
            raise SystemExit(f"sync exited {self.process.returncode}: see {self.log}")
        verify = self._cli("verify", "--prefix", self.root)
        summary = next((line for line in verify.stdout.splitlines()
                        if line.startswith(self.root + ":")), verify.stderr.strip()[-300:])
        drift = int(m.group(1)) if (m := re.search(r"(\d+) differ", summary)) else -1
        objects = n_bytes = 0
        s3 = self.chain.client("s3")
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                 Prefix=self.prefix):
            for o in page.get("Contents", []):
                objects, n_bytes = objects + 1, n_bytes + o["Size"]
        windows, avg, worst = self._lag()
        return Replica(self.destination, self.root, objects, n_bytes, summary, drift, windows,
                       avg, worst)

    def _lag(self) -> tuple[int, float | None, float | None]:
        points = self.chain.client("cloudwatch").get_metric_statistics(
            Namespace=names.METRICS_NAMESPACE, MetricName=names.METRIC_SYNC_LAG_SECONDS,
            Dimensions=[{"Name": names.DIMENSION_CLUSTER, "Value": self.chain.cluster}],
            StartTime=self.started - timedelta(minutes=1),
            EndTime=datetime.now(UTC) + timedelta(minutes=1), Period=60,
            Statistics=["Average", "Maximum", "SampleCount"])["Datapoints"]
        count = sum(int(p["SampleCount"]) for p in points)
        if not count:
            return 0, None, None
        avg = sum(p["Average"] * p["SampleCount"] for p in points) / count
        return count, avg, max(p["Maximum"] for p in points)
