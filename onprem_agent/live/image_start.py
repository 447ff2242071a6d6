"""First start from the NameNode's fsimage (`[inotify] first_start = "fsimage"`; docs/agent.md):
no listing RPC, however large the namespace.

1. The newest image the lake holds with `_indexed.json` beside it: the index is written from it
   already (a crash after the job, before the checkpoint): its txid T is where to go on.
2. Otherwise the NameNode's latest checkpoint into the lake (image_fetch: a rerun uploads
   nothing when the image is there), and the edits after it checked still there (one inotify
   poll from T): purged edits fall back to the listing start.
3. The inventory job run for this image started (glue:StartJobRun on the named job), unless one
   is running or succeeded already (glue:GetJobRuns: a restart while waiting does not start a
   second), and `_indexed.json` waited for: the job writes the index and the sequencer's
   position at T (glue_jobs/image_index.py).
4. The caller saves checkpoint T: the stream goes on at T+1 as after any restart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hdfs_events.lake_layout import (
    fsimage_cluster_prefix,
    fsimage_indexed_key,
    fsimage_key,
    indexed_txid,
)

log = logging.getLogger(__name__)

# Glue's JobRunState values: a run in these is (or will be) writing the index.
_LIVE = ("STARTING", "RUNNING", "WAITING", "STOPPING")
_FAILED = ("FAILED", "ERROR", "TIMEOUT", "STOPPED", "EXPIRED")
_LOG_EVERY_S = 60  # a progress line while the run's state stays the same


class ImageStartError(RuntimeError):
    """The index could not be written from the image; the message says why."""


@dataclass(frozen=True, slots=True)
class ImageStartPlan:
    cluster: str
    bucket: str
    job_name: str
    wait_s: float
    poll_s: float = 2.0  # a LIST and a GetJobRun: cheap beside a run of minutes


def indexed_txids(s3: Any, bucket: str, cluster: str) -> list[int]:
    """Txids of the images whose index is written (their `_indexed.json`), newest first."""
    found: list[int] = []
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=fsimage_cluster_prefix(cluster))
    for page in pages:
        for obj in page.get("Contents", ()):
            if (txid := indexed_txid(obj["Key"])) is not None:
                found.append(txid)
    return sorted(found, reverse=True)


def image_run(glue: Any, job_name: str, image_uri: str) -> dict[str, Any] | None:
    """The newest run of the job for this image that is live or succeeded."""
    runs: list[dict[str, Any]] = []
    for page in glue.get_paginator("get_job_runs").paginate(JobName=job_name):
        runs += [r for r in page.get("JobRuns", ())
                 if r.get("Arguments", {}).get("--image") == image_uri
                 and r.get("JobRunState") not in _FAILED]
    return max(runs, key=lambda r: r.get("StartedOn") or 0, default=None)


class ImageStart:
    def __init__(self, plan: ImageStartPlan, *, s3: Any, glue: Any,
                 fetch: Callable[[], int], edits_kept_after: Callable[[int], bool],
                 sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """fetch: the NameNode's latest image into the lake, its txid; edits_kept_after(T):
        the NameNode still has the edits from T+1 on."""
        self.plan, self.s3, self.glue = plan, s3, glue
        self._fetch, self._kept = fetch, edits_kept_after
        self._sleep, self._monotonic = sleep, monotonic

    def run(self) -> int | None:
        """T, the txid the index is written through; None: fall back to the listing start."""
        plan = self.plan
        done = indexed_txids(self.s3, plan.bucket, plan.cluster)
        if done:
            log.info("first start from the fsimage: the index is written from the image of "
                     "txid %d already; streaming after it", done[0])
            return done[0]
        started = self._monotonic()
        txid = self._fetch()
        if not self._kept(txid):
            log.warning("first start from the fsimage: the NameNode has purged the edits after "
                        "its image's txid %d, so the stream cannot go on from it; listing the "
                        "covered namespace instead", txid)
            return None
        uri = f"s3://{plan.bucket}/{fsimage_key(plan.cluster, txid)}"
        run = image_run(self.glue, plan.job_name, uri)
        if run is None:
            run_id = self.glue.start_job_run(
                JobName=plan.job_name,
                Arguments={"--cluster": plan.cluster, "--image": uri})["JobRunId"]
            log.info("first start from the fsimage: started %s run %s for %s", plan.job_name,
                     run_id, uri)
        else:
            run_id = run["Id"]
            log.info("first start from the fsimage: %s run %s for %s is %s already; waiting "
                     "for it", plan.job_name, run_id, uri, run["JobRunState"])
        self._wait(txid, run_id, started)
        return txid

    def _wait(self, txid: int, run_id: str, started: float) -> None:
        plan = self.plan
        key = fsimage_indexed_key(plan.cluster, txid)
        logged: tuple[str | None, float] = (None, 0.0)  # (state, seconds waited) last logged
        while True:
            listed = self.s3.list_objects_v2(Bucket=plan.bucket, Prefix=key)
            if listed.get("KeyCount", len(listed.get("Contents", ()))):
                log.info("first start from the fsimage: index written through txid %d in "
                         "%.0f s; streaming after it", txid, self._monotonic() - started)
                return
            state = self.glue.get_job_run(JobName=plan.job_name, RunId=run_id)["JobRun"]
            if state.get("JobRunState") in _FAILED:
                raise ImageStartError(
                    f"{plan.job_name} run {run_id} for txid {txid} ended "
                    f"{state['JobRunState']}: {state.get('ErrorMessage', 'no message')}; the "
                    "next start runs it again (or set [inotify] first_start = \"listing\")")
            waited = self._monotonic() - started
            if waited > plan.wait_s:
                raise ImageStartError(
                    f"{plan.job_name} run {run_id} has not written the index of txid {txid} "
                    f"after {waited:.0f} s ([fsimage] index_wait_s); the next start waits for "
                    "it again")
            if state.get("JobRunState") != logged[0] or waited - logged[1] >= _LOG_EVERY_S:
                log.info("first start from the fsimage: waiting for %s run %s (%s, %.0f s)",
                         plan.job_name, run_id, state.get("JobRunState"), waited)
                logged = (state.get("JobRunState"), waited)
            self._sleep(plan.poll_s)


def edits_kept_after(source: Any, txid: int) -> bool:
    """One poll of an inotify stream opened at `txid`: MissingEventsException says the NameNode
    purged the edits after it (its first edit is later than txid + 1)."""
    import jpype

    missing = jpype.JClass("org.apache.hadoop.hdfs.inotify.MissingEventsException")
    try:
        source.open_stream(txid).poll()
    except missing:
        return False
    return True


def image_start_for(config: Any, live: Any, client: Any) -> ImageStart:
    """The agent's ImageStart: [fsimage] of agent.toml, the JVM's Hadoop configuration (the
    Kerberos login, if any, is the JVM's), boto3 clients with the agent's credentials."""
    import boto3
    from botocore.config import Config

    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.image_fetch import FSIMAGE, LakeImages, fetch_image
    from onprem_agent.live.hadoop import hadoop_configuration

    settings = config.read(FSIMAGE)
    if not settings.inventory_job:
        raise ConfigError(f"{config.path.name}: [fsimage] inventory_job: required with "
                          "[inotify] first_start = \"fsimage\" (CDK output InventoryJobName)")
    retries = Config(retries={"mode": "standard", "max_attempts": 5})
    s3 = boto3.client("s3", config=retries)
    lake = LakeImages(s3, settings.bucket, config.cluster, settings.part_size)

    def fetch() -> int:
        # DFSAdmin finds the NameNode in fs.defaultFS, as `hdfs dfsadmin` does.
        conf = hadoop_configuration({"fs.defaultFS": live.hdfs.uri})
        fetched = fetch_image(conf, lake, settings.download_dir)
        log.info("first start from the fsimage: %s", fetched.line())
        return fetched.txid

    plan = ImageStartPlan(config.cluster, settings.bucket, settings.inventory_job,
                          wait_s=settings.index_wait_s)
    return ImageStart(plan, s3=s3, glue=boto3.client("glue", config=retries), fetch=fetch,
                      edits_kept_after=lambda txid: edits_kept_after(client, txid))
