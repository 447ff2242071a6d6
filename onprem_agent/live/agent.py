"""One term of the live agent: the inotify source feeding the shipping pipeline, with its
metrics, gap alerts and (when HA) the lease that allows it to ship; `ship_repairing_gaps`, the
terms of one lead with gap_policy = "fsimage" (a gap ends a term, the index is repaired from
the image, the next term ships after it); and `serve`, the loop of leads an agent runs
(standby, lead, back to standby on a lost lease).

Nothing here starts a JVM or reads a config file: `commands/run.py` builds the real parts
(Hadoop client, SQS sender, DynamoDB checkpoint) and hands them in; tests hand in doubles.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hdfs_events import names
from onprem_agent.checkpoint import CheckpointStore
from onprem_agent.config import AgentConfig
from onprem_agent.lease import Lease, LeaseKeeper, wait_until_leader
from onprem_agent.live.reconnect import Backoff
from onprem_agent.live.settings import LiveSettings
from onprem_agent.live.snapshot import NamespaceLister, namespace_snapshot
from onprem_agent.live.stream import (
    BatchConverter,
    Gap,
    InotifyGapError,
    LiveSource,
    LiveStats,
    StreamSource,
)
from onprem_agent.opsmetrics import AgentReadings, Alerts, cloudwatch_datum, put_metrics, seconds_since
from onprem_agent.pipeline import Pipeline, PipelineResult
from onprem_agent.sender import Sender

log = logging.getLogger(__name__)


@dataclass(slots=True)
class AgentState:
    """What the metrics endpoint reads between terms and during one."""

    stats: LiveStats
    pipeline: Pipeline | None = None
    sender: Sender | None = None
    leader: bool = False


def readings(state: AgentState) -> AgentReadings:
    def snap() -> Any:
        return state.pipeline.snapshot() if state.pipeline is not None else None

    def sent() -> float | None:
        s = snap()
        return None if s is None else s.events_sent

    def checkpoint() -> float | None:
        s = snap()
        return None if s is None else s.checkpoint_txid

    def errors() -> float:
        stats = getattr(state.sender, "stats", None)
        return float(getattr(stats, "failed_calls", 0))

    return AgentReadings(
        events_read=lambda: state.stats.events_read, events_sent=sent, send_errors=errors,
        txid_lag=lambda: state.stats.txids_behind,
        seconds_lag=lambda: seconds_since(state.stats.last_event_ms),
        checkpoint_txid=checkpoint, leader=lambda: 1.0 if state.leader else 0.0,
        gaps=lambda: len(state.stats.gaps),
        namenode_unavailable=lambda: 1.0 if state.stats.namenode_unavailable else 0.0)


def gap_reporter(cluster: str, alerts: Alerts, metrics_client: Any = None,
                 *, cloudwatch: bool = True) -> Callable[[Gap], None]:
    """A gap is an error log line (LiveSource writes it), an InotifyGap metric and an alert."""

    def report(gap: Gap) -> None:
        if cloudwatch:
            try:
                put_metrics([cloudwatch_datum(cluster, names.METRIC_INOTIFY_GAP,
                                              gap.available_txid - gap.expected_txid)],
                            metrics_client)
            except Exception as exc:  # the alert below still goes out
                log.warning("InotifyGap metric not sent: %s", exc)
        alerts.send(f"hdfs-events {cluster}: inotify gap", gap.details(),
                    {"cluster": cluster, "expected_txid": str(gap.expected_txid),
                     "available_txid": str(gap.available_txid)})

    return report


def run_term(config: AgentConfig, settings: LiveSettings, state: AgentState, *,
             stream_source: StreamSource, converter: BatchConverter, lister: NamespaceLister,
             sender: Sender, checkpoint: CheckpointStore, stop: threading.Event,
             on_gap: Callable[[Gap], None], keeper: LeaseKeeper | None = None,
             on_idle: Callable[[], None] | None = None,
             before_reconnect: Callable[[], None] | None = None,
             list_gap_at: int | None = None) -> PipelineResult:
    """Ships from the checkpoint until `stop`, a lost lease, or an error (InotifyGapError
    with gap_policy = "stop" or "fsimage"; a failure reconnect.py does not wait out). An
    unavailable NameNode is waited for inside the term: the pipeline, its sender and its
    checkpoint stay, so nothing read before the outage is read or sent again. list_gap_at:
    the gap at this txid is listed whatever the policy (the image could not repair it)."""
    term_stop = threading.Event()
    inotify = settings.inotify
    pipeline = Pipeline(config, sender=sender, checkpoint=checkpoint)
    state.pipeline, state.sender, state.leader = pipeline, sender, True
    source = LiveSource(
        stream_source, converter, cluster=config.cluster, start_txid=pipeline.resume_after,
        stop=term_stop, gap_policy=inotify.gap_policy,
        snapshot=namespace_snapshot(config.cluster, lister, inotify.snapshot_paths,
                                    workers=inotify.snapshot_workers),
        on_gap=on_gap, poll_timeout_ms=inotify.poll_timeout_ms,
        max_batches_per_drain=inotify.max_batches_per_drain,
        roll_edits_every_txids=inotify.roll_edits_every_txids, stats=state.stats,
        on_idle=on_idle,
        backoff=Backoff(settings.hdfs.reconnect_initial_s, settings.hdfs.reconnect_max_s),
        before_reconnect=before_reconnect,
        shipped=lambda: pipeline.snapshot().checkpoint_txid, list_gap_at=list_gap_at)

    def watch() -> None:  # turns the agent's stop, or a lost lease, into this term's stop
        while not term_stop.is_set():
            if stop.wait(0.1) or (keeper is not None and keeper.lost.is_set()):
                term_stop.set()

    watcher = threading.Thread(target=watch, name="term-watch", daemon=True)
    watcher.start()
    log.info("shipping cluster %s from txid %s", config.cluster,
             pipeline.resume_after if pipeline.resume_after is not None else "<current>")
    try:
        return pipeline.run(source.chunks(), term_stop)
    finally:
        term_stop.set()
        watcher.join()
        state.leader = False


def ship_repairing_gaps(ship: Callable[[int | None], object], *,
                        repair: Callable[[int], int | None] | None,
                        checkpoint: CheckpointStore, stop: threading.Event) -> None:
    """Terms until one ends without a gap (`stop`, a lost lease). `ship(list_gap_at)` runs a
    term (run_term, a new sender each time). Without `repair` (gap_policy "snapshot" or
    "stop") that is one term, and InotifyGapError goes to the caller (exit 3). With it
    (gap_policy "fsimage"), a term that meets purged edits from txid E ships the GAP and ends
    (InotifyGapError), and then:

    - checkpoint E - 1 (every range through E - 1 acknowledged): `repair(E)` has the inventory
      job write the index from the NameNode's image of txid T (image_start.py); checkpoint T,
      and the next term ships from T + 1. The GAP's txid lies in (E - 1, T], a range no
      manifest names: the index never applies it, the lake and the alarms still get it;
    - a checkpoint below (its last manifest was not acknowledged in time): the term again,
      which sends again from the checkpoint and meets the same gap (the same GAP key);
    - repair None (the NameNode purged the edits after its latest image too): the term again
      with that gap listed, as gap_policy "snapshot" would; later gaps are repaired again.
    A stop while the repair waits for the job: ImageStartStopped, from `repair`."""
    list_gap_at: int | None = None
    while not stop.is_set():
        try:
            ship(list_gap_at)
            return
        except InotifyGapError as exc:
            if repair is None:
                raise
            gap = exc.gap
        list_gap_at = None
        if stop.is_set():
            return
        shipped = checkpoint.load()
        if shipped != gap.expected_txid - 1:
            log.warning("gap at txid %d: the checkpoint is %s, not %d (the last manifest was not "
                        "acknowledged in time); shipping from it again", gap.expected_txid,
                        shipped, gap.expected_txid - 1)
            continue
        txid = repair(gap.expected_txid)
        if txid is None:
            list_gap_at = gap.expected_txid
        else:
            checkpoint.save(txid)


def serve(lease: Lease | None, stop: threading.Event, *, renew_interval_s: float,
          term: Callable[[LeaseKeeper | None], object]) -> None:
    """Runs terms until `stop`. Without a lease, one term. With one: standby until this agent
    holds the lease, then a term while a keeper renews it; a lost lease ends the term and
    sends the agent back to standby. A term's error (InotifyGapError, ...) ends serving; on
    the way out the lease is released, so the standby need not wait for it to expire."""
    try:
        while not stop.is_set():
            keeper = None
            if lease is not None:
                log.info("standby: waiting for the lease of cluster %s as %s", lease.cluster,
                         lease.holder_id)
                if not wait_until_leader(lease, stop, interval_s=renew_interval_s):
                    return
                keeper = LeaseKeeper(lease, interval_s=renew_interval_s).start()
            try:
                term(keeper)
            finally:
                if keeper is not None:
                    keeper.stop()
            if keeper is None:
                return
            if keeper.lost.is_set():
                log.warning("lost the lease: back to standby")
    finally:
        if lease is not None and lease.held:
            lease.release()
