"""The index written from the NameNode's fsimage by the inventory job (docs/agent.md): no listing
RPC, however large the namespace. Two uses, one sequence:

- First start (`[inotify] first_start = "fsimage"`, `run`): no checkpoint yet.
- Gap repair (`[inotify] gap_policy = "fsimage"`, `repair(E)`): edits from txid E on were
  purged; the term shipped the GAP and stopped with the checkpoint at E - 1.

1. The newest image the lake holds with `_indexed.json` beside it (for a repair, of txid >= E):
   the index is written from it already (a crash after the job, before the checkpoint): its
   txid T is where to go on.
2. Otherwise the NameNode's latest checkpoint into the lake (image_fetch: a rerun uploads
   nothing when the image is there), and the edits after it checked still there (one inotify
   poll from T): purged edits (or, for a repair, an image older than E) fall back to the
   listing.
3. The inventory job run for this image started (glue:StartJobRun on the named job; a repair
   adds `--repair_after E-1`), unless one is running or succeeded already (glue:GetJobRuns: a
   restart while waiting does not start a second), and `_indexed.json` waited for: the job
   writes the index and the sequencer's position at T (glue_jobs/image_index.py; a repair once
   the consumer applied everything through E - 1, and it removes what the image lacks).
4. The caller saves checkpoint T: the stream goes on at T+1 as after any restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hdfs_events.lake_layout import (
    fsimage_cluster_prefix,
    fsimage_indexed_key,
    fsimage_key,
    indexed_txid,
    parse_fsimage_key,
)

if TYPE_CHECKING:
    from onprem_agent.image_fetch import FetchedImage

log = logging.getLogger(__name__)

# Glue's JobRunState values: a run in these is (or will be) writing the index.
_LIVE = ("STARTING", "RUNNING", "WAITING", "STOPPING")
_FAILED = ("FAILED", "ERROR", "TIMEOUT", "STOPPED", "EXPIRED")
_LOG_EVERY_S = 60  # a progress line while the run's state stays the same


class ImageStartError(RuntimeError):
    """The index could not be written from the image; the message says why."""


class ImageStartStopped(Exception):
    """The agent was told to stop while waiting for the index: the next start finds the run,
    or its marker, again."""


@dataclass(frozen=True, slots=True)
class _Use:
    """What the log lines and errors call the work (an operator greps for it), and the setting
    that does without the image."""

    name: str
    instead: str


_FIRST_START = _Use("first start from the fsimage", '[inotify] first_start = "listing"')
_GAP_REPAIR = _Use("gap repair from the fsimage", '[inotify] gap_policy = "snapshot"')


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


def newest_run(glue: Any, job_name: str, argument: str, value: str,
               states: Callable[[str | None], bool]) -> dict[str, Any] | None:
    """The newest run of the job whose `argument` is `value` and whose state `states` takes."""
    runs: list[dict[str, Any]] = []
    for page in glue.get_paginator("get_job_runs").paginate(JobName=job_name):
        runs += [r for r in page.get("JobRuns", ())
                 if r.get("Arguments", {}).get(argument) == value
                 and states(r.get("JobRunState"))]
    return max(runs, key=lambda r: r.get("StartedOn") or 0, default=None)


def image_run(glue: Any, job_name: str, image_uri: str) -> dict[str, Any] | None:
    """The newest run of the job for this image that is live or succeeded."""
    return newest_run(glue, job_name, "--image", image_uri, lambda s: s not in _FAILED)


def repair_run(glue: Any, job_name: str, repair_after: int) -> dict[str, Any] | None:
    """The newest live run of the job repairing the gap after `repair_after` (any image)."""
    return newest_run(glue, job_name, "--repair_after", str(repair_after), lambda s: s in _LIVE)


def image_txid(uri: str) -> int:
    """The txid of an image's s3:// URI (lake_layout.fsimage_key)."""
    parsed = parse_fsimage_key(uri.removeprefix("s3://").partition("/")[2])
    if parsed is None:
        raise ImageStartError(f"not an fsimage of the lake: {uri}")
    return parsed[1]


class ImageStart:
    def __init__(self, plan: ImageStartPlan, *, s3: Any, glue: Any,
                 fetch: Callable[[], FetchedImage], edits_kept_after: Callable[[int], bool],
                 stop: threading.Event | None = None,
                 sleep: Callable[[float], object] | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """fetch: the NameNode's latest image into the lake; edits_kept_after(T): the NameNode
        still has the edits from T+1 on; stop: ends the wait for the index (sleep: by default
        a wait on it, so a stop ends a poll's sleep at once)."""
        self.plan, self.s3, self.glue = plan, s3, glue
        self._fetch, self._kept = fetch, edits_kept_after
        self._stop = stop if stop is not None else threading.Event()
        self._sleep = sleep if sleep is not None else self._stop.wait
        self._monotonic = monotonic

    def run(self) -> int | None:
        """First start: T, the txid the index is written through; None: fall back to the
        listing start."""
        done = indexed_txids(self.s3, self.plan.bucket, self.plan.cluster)
        if done:
            return self._written_already(_FIRST_START, done[0])
        return self._index_latest_image(_FIRST_START)

    def repair(self, expected_txid: int) -> int | None:
        """Gap repair: edits from `expected_txid` on were purged and the checkpoint is at
        expected_txid - 1. T, the txid the index is repaired through; None: list instead (the
        NameNode purged the edits after its latest image too). A marker of an older image (a
        first start's, an earlier repair's) says nothing of this gap."""
        done = [txid for txid in indexed_txids(self.s3, self.plan.bucket, self.plan.cluster)
                if txid >= expected_txid]
        if done:
            return self._written_already(_GAP_REPAIR, done[0])
        # A run for this gap still live (the agent restarted while it waited): wait for that
        # one, whatever image it reads. A second run on a newer image would wait for the same
        # position and write beside the first (docs/fsimage.md, "Gap repair from the image").
        live = repair_run(self.glue, self.plan.job_name, expected_txid - 1)
        if live is not None:
            txid = image_txid(live["Arguments"]["--image"])
            log.info("%s: %s run %s for %s is %s already; waiting for it", _GAP_REPAIR.name,
                     self.plan.job_name, live["Id"], live["Arguments"]["--image"],
                     live["JobRunState"])
            self._wait(_GAP_REPAIR, txid, live["Id"], self._monotonic())
            return txid
        return self._index_latest_image(_GAP_REPAIR, repair_after=expected_txid - 1)

    def _written_already(self, use: _Use, txid: int) -> int:
        log.info("%s: the index is written from the image of txid %d already; streaming "
                 "after it", use.name, txid)
        return txid

    def _index_latest_image(self, use: _Use, repair_after: int | None = None) -> int | None:
        """Steps 2 and 3 of the module doc: T, or None to list instead."""
        plan = self.plan
        started = self._monotonic()
        fetched = self._fetch()
        txid = fetched.txid
        log.info("%s: %s", use.name, fetched.line())
        if repair_after is not None and txid <= repair_after:
            log.warning("%s: the NameNode's latest image (txid %d) is older than the gap at "
                        "txid %d; listing the covered namespace instead", use.name, txid,
                        repair_after + 1)
            return None
        if not self._kept(txid):
            log.warning("%s: the NameNode has purged the edits after its image's txid %d, so "
                        "the stream cannot go on from it; listing the covered namespace "
                        "instead", use.name, txid)
            return None
        uri = f"s3://{plan.bucket}/{fsimage_key(plan.cluster, txid)}"
        run = image_run(self.glue, plan.job_name, uri)
        if run is None:
            arguments = {"--cluster": plan.cluster, "--image": uri}
            if repair_after is not None:
                arguments["--repair_after"] = str(repair_after)
            run_id = self.glue.start_job_run(JobName=plan.job_name,
                                             Arguments=arguments)["JobRunId"]
            log.info("%s: started %s run %s for %s", use.name, plan.job_name, run_id, uri)
        else:
            run_id = run["Id"]
            log.info("%s: %s run %s for %s is %s already; waiting for it", use.name,
                     plan.job_name, run_id, uri, run["JobRunState"])
        self._wait(use, txid, run_id, started)
        return txid

    def _wait(self, use: _Use, txid: int, run_id: str, started: float) -> None:
        plan = self.plan
        key = fsimage_indexed_key(plan.cluster, txid)
        logged: tuple[str | None, float] = (None, 0.0)  # (state, seconds waited) last logged
        while True:
            listed = self.s3.list_objects_v2(Bucket=plan.bucket, Prefix=key)
            if listed.get("KeyCount", len(listed.get("Contents", ()))):
                log.info("%s: index written through txid %d in %.0f s; streaming after it",
                         use.name, txid, self._monotonic() - started)
                return
            state = self.glue.get_job_run(JobName=plan.job_name, RunId=run_id)["JobRun"]
            if state.get("JobRunState") in _FAILED:
                raise ImageStartError(
                    f"{use.name}: {plan.job_name} run {run_id} for txid {txid} ended "
                    f"{state['JobRunState']}: {state.get('ErrorMessage', 'no message')}; the "
                    f"next start runs it again (or set {use.instead})")
            waited = self._monotonic() - started
            if waited > plan.wait_s:
                raise ImageStartError(
                    f"{use.name}: {plan.job_name} run {run_id} has not written the index of "
                    f"txid {txid} after {waited:.0f} s ([fsimage] index_wait_s); the next "
                    "start waits for it again")
            if state.get("JobRunState") != logged[0] or waited - logged[1] >= _LOG_EVERY_S:
                log.info("%s: waiting for %s run %s (%s, %.0f s)", use.name, plan.job_name,
                         run_id, state.get("JobRunState"), waited)
                logged = (state.get("JobRunState"), waited)
            self._sleep(plan.poll_s)
            if self._stop.is_set():
                log.info("%s: stopped while waiting for %s run %s; the next start waits for "
                         "it again", use.name, plan.job_name, run_id)
                raise ImageStartStopped(f"{use.name}: stopped while waiting for {run_id}")


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


def image_start_for(config: Any, live: Any, client: Any, stop: threading.Event) -> ImageStart:
    """The agent's ImageStart: [fsimage] of agent.toml (load_live_settings checked that it
    names the job), the JVM's Hadoop configuration (the Kerberos login, if any, is the JVM's),
    boto3 clients with the agent's credentials."""
    import boto3
    from botocore.config import Config

    from onprem_agent.image_fetch import FSIMAGE, LakeImages, fetch_image
    from onprem_agent.live.hadoop import hadoop_configuration

    settings = config.read(FSIMAGE)
    retries = Config(retries={"mode": "standard", "max_attempts": 5})
    s3 = boto3.client("s3", config=retries)
    lake = LakeImages(s3, settings.bucket, config.cluster, settings.part_size)

    def fetch() -> FetchedImage:
        # DFSAdmin finds the NameNode in fs.defaultFS, as `hdfs dfsadmin` does.
        return fetch_image(hadoop_configuration({"fs.defaultFS": live.hdfs.uri}), lake,
                           settings.download_dir)

    plan = ImageStartPlan(config.cluster, settings.bucket, settings.inventory_job,
                          wait_s=settings.index_wait_s)
    return ImageStart(plan, s3=s3, glue=boto3.client("glue", config=retries), fetch=fetch,
                      edits_kept_after=lambda txid: edits_kept_after(client, txid), stop=stop)
