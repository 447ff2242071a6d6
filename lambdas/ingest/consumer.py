"""One message in, its effects out: decode, lake, index, log, count. No SQS record here.

Reading a message (decoding, the contract's checks, the sender's identity, building its lake
objects) touches no AWS service, and any exception while reading is the message's fault: it is
quarantined with the reason, never retried, so it cannot hold back its message group or the
index. Only the effects that follow are AWS calls, and only their failures are retried.

Order matters for retries: the lake object (keyed by the dedup id) and the arrival record are
idempotent, so a message that fails half-way is simply processed again; log lines and metrics
are emitted only after both succeeded, so a redelivery does not count twice what it repeats.

A batch's writes run in parallel (`storing_ahead`): each event message is read before the
processor takes the batch, and its writes (lake objects, then arrival) start in a pool; `process`
waits for its own, raising what they raised, then logs and counts. Idempotence makes that safe: a
message the processor then fails or skips (an earlier one of its group failed) is written again
when SQS delivers it again, and logged and counted only then; its arrival is true meanwhile (its
lake objects are there). The writes end with the batch: no thread writes after the invocation,
and arrivals are stored before it sends its continue requests (`finish`).

The index is fed in txid order by the sequencer (lambdas/ingest/sequencer.py): a message only
records its arrival, a manifest its range. Ranges are applied by invocations of their own, those
of the apply queue (`finish`): an invocation of event messages ends by sending a continue request
for each cluster it touched, and returns, so the next messages of its FIFO groups wait for its
lake writes and arrivals only, never for the index (with ranges applied at the end of event
invocations, in slices of 500 ms, bench.chain_speed saw events wait up to 4 s in SQS behind
invocations applying: lake freshness p99 3.4 s). An invocation of continue requests applies the
ranges that became complete until it has caught up, and looks again until its requests' window
has ended (at most one request a cluster and second is queued:
hdfs_events/continue_request.py), or asks for another when out of time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from hdfs_events.continue_request import (
    ContinueRequest,
    decode_continue_request,
    look_until,
    window_of,
)
from hdfs_events.envelope import EnvelopeError, decode_envelope
from hdfs_events.event import HdfsEvent
from hdfs_events.ids import CLUSTER_NAME
from hdfs_events.manifest import ManifestError, decode_manifest
from hdfs_events.names import KIND_ATTRIBUTE, KIND_CONTINUE, KIND_MANIFEST
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.lake import LakeObject, lake_objects
from lambdas.ingest.logging_modes import gap_lines, log_records
from lambdas.ingest.quarantine import bounded_reason, quarantine_record
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.senders import ClusterSenders
from lambdas.ingest.sequencer import ApplyReport, IndexSequencer, Position
from lambdas.ingest.telemetry import BatchTelemetry

UNKNOWN_CLUSTER = "unknown"
SKIPPED_LINES = 100  # skipped events logged one by one per cluster and invocation; the metric counts them all
# A worker per message of a batch (the event source mapping's batch size, 10, is SQS's maximum);
# botocore's default pool of 10 connections per client serves them all.
AHEAD_WORKERS = 10
# Between looks for complete ranges while a taken request's window lasts (a DynamoDB query each
# when nothing is ready; at most WINDOW_MS + CLOCK_SKEW_MS of them, ~12 a second and cluster).
LOOK_INTERVAL_MS = 100


class ForeignSender(ValueError):
    """A message whose sender or group is not its cluster's own (lambdas/ingest/senders.py)."""

    def __init__(self, cluster: str, reason: str) -> None:
        super().__init__(reason)
        self.cluster = cluster


class Lake(Protocol):
    def put(self, key: str, body: bytes, content_type: str,
            metadata: Mapping[str, str] | None = None) -> None: ...


class ContinueRequests(Protocol):
    def send_continue(self, request: ContinueRequest, *, key: str) -> None: ...


class EventLogger(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> None: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None: ...

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None: ...

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class _Ahead:
    """An event message read before the processor took it, and its writes under way."""

    events: Sequence[HdfsEvent]
    stored: Future[None]


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # ingested | quarantined | manifest | continue
    events: int = 0
    reason: str | None = None


class MessageConsumer:
    def __init__(self, *, lake: Lake, sequencer: IndexSequencer | None,
                 continue_requests: ContinueRequests | None, log_mode: str, logger: EventLogger,
                 senders: ClusterSenders, telemetry: BatchTelemetry | None = None,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.lake, self.sequencer, self.continue_requests = lake, sequencer, continue_requests
        self.senders = senders
        self.log_mode, self.logger = log_mode, logger
        self.telemetry = telemetry or BatchTelemetry()
        self.clock_ms, self.sleep = clock_ms, sleep
        self.to_apply: set[str] = set()  # clusters whose index may have a range to apply
        self.requested = False  # the invocation took a continue request: it applies ranges
        self.windows: dict[str, int] = {}  # cluster -> the latest window end its requests name
        self._pool = ThreadPoolExecutor(max_workers=AHEAD_WORKERS, thread_name_prefix="store-ahead")
        self._ahead: dict[str, _Ahead] = {}  # by message id, until `process` takes it

    @property
    def index(self) -> NamespaceIndex | None:
        return self.sequencer.index if self.sequencer is not None else None

    def process(self, message: QueueMessage) -> Outcome:
        kind = message.string_attribute(KIND_ATTRIBUTE)
        if kind == KIND_MANIFEST:
            return self._manifest(message)
        if kind == KIND_CONTINUE:
            return self._continue_request(message)
        ahead = self._ahead.pop(message.message_id, None)
        if ahead is not None:
            ahead.stored.result()  # a failed write raises here as it would below
            return self._ingested(message, ahead.events)
        try:
            events, objects = self._read(message)
        except Exception as exc:  # reading is pure: any failure is the message's own
            return self._unreadable(message, exc)
        self._store(message, events, objects)
        return self._ingested(message, events)

    @contextmanager
    def storing_ahead(self, messages: Iterable[QueueMessage]) -> Iterator[None]:
        """While a batch is processed, its event messages' writes run in the pool (see the module
        docstring); on leaving, waits for those `process` did not take, and forgets them."""
        try:
            for message in messages:
                kind = message.string_attribute(KIND_ATTRIBUTE)
                # An id seen twice (never from SQS) goes the usual way: one entry an id.
                if kind in (KIND_MANIFEST, KIND_CONTINUE) or message.message_id in self._ahead:
                    continue
                try:
                    events, objects = self._read(message)
                except Exception:  # `process` reads it again and quarantines it with the reason
                    continue
                self._ahead[message.message_id] = _Ahead(
                    events, self._pool.submit(self._store, message, events, objects))
            yield
        finally:
            left, self._ahead = self._ahead, {}
            # Their messages were skipped (or the processor stopped): SQS delivers them again, and
            # a write that failed here is retried then, raising in `process` if it fails again.
            wait([entry.stored for entry in left.values()])

    def _read(self, message: QueueMessage) -> tuple[Sequence[HdfsEvent], list[LakeObject]]:
        decoded = decode_envelope(message.body, message.message_attributes)
        self._check_sender(decoded.events[0].cluster, message)
        return decoded.events, lake_objects(
            decoded.events, decoded.lines, dedup_id=message.dedup_id,
            sent_timestamp_ms=message.sent_timestamp_ms, unknown_envelope=decoded.unknown_envelope)

    def _store(self, message: QueueMessage, events: Sequence[HdfsEvent],
               objects: Sequence[LakeObject]) -> None:
        """The lake objects, then the arrival: an arrival names objects that are there."""
        for obj in objects:
            self.lake.put(obj.key, obj.body, "application/x-ndjson", obj.metadata)
        if self.sequencer is not None:
            self.sequencer.arrived(_arrival_id(message), events, [obj.key for obj in objects])

    def _ingested(self, message: QueueMessage, events: Sequence[HdfsEvent]) -> Outcome:
        """What follows the writes: only once they succeeded, so a retry counts nothing twice."""
        if self.sequencer is not None:
            self.to_apply.add(events[0].cluster)
        for msg, fields in gap_lines(events, message_id=message.message_id):
            self.logger.error(msg, extra=fields)
        for msg, fields in log_records(events, self.log_mode, message_id=message.message_id):
            self.logger.info(msg, extra=fields)
        self.telemetry.message(events, len(message.body.encode("utf-8")), self.clock_ms())
        return Outcome("ingested", events=len(events))

    def _manifest(self, message: QueueMessage) -> Outcome:
        try:
            manifest = decode_manifest(message.body)
            self._check_sender(manifest.cluster, message)
        except Exception as exc:  # reading is pure: any failure is the message's own
            return self._unreadable(message, exc)
        if self.sequencer is not None:
            self.sequencer.manifest(manifest)
            self.to_apply.add(manifest.cluster)
        return Outcome("manifest")

    def _continue_request(self, message: QueueMessage) -> Outcome:
        try:
            request = decode_continue_request(message.body)
        except Exception as exc:  # reading is pure: any failure is the message's own
            return self._quarantine(message, f"bad continue request: {exc!r}")
        if self.sequencer is not None:
            self.to_apply.add(request.cluster)
            self.requested = True
            if request.window_end_ms is not None:
                self.windows[request.cluster] = max(self.windows.get(request.cluster, 0),
                                                    request.window_end_ms)
        return Outcome("continue")

    def finish(self, deadline_ms: int) -> None:
        """What follows a batch: an invocation that took a continue request applies ranges for
        every cluster it touched, until `deadline_ms`; any other asks for an invocation that
        will (a continue request each, after every arrival it stored: no arrival is left
        without a request sent after it, or dropped as a duplicate of one whose taker looks
        after it). One request still queued on the event queue from before issue 32 makes its
        invocation apply, once."""
        if self.requested:
            self.apply_ranges(deadline_ms)
            return
        # Read after every arrival was stored. Keyed by its window: SQS sends the cluster's
        # requests of one window once, whichever invocation sends them (at most one a second
        # queued, hdfs_events/continue_request.py).
        key, window_end = window_of(self.clock_ms())
        for cluster in sorted(self.to_apply):
            self._request(ContinueRequest(cluster, window_end), key)
        self.to_apply.clear()

    def _request(self, request: ContinueRequest, key: str) -> None:
        if self.continue_requests is None:
            return
        try:
            self.continue_requests.send_continue(request, key=key)
        except Exception:
            self.logger.exception("index continue request failed; the next message for the "
                                  "cluster tries again", extra={"cluster": request.cluster})
            self.telemetry.apply_failed(request.cluster)

    def apply_ranges(self, deadline_ms: int) -> dict[str, ApplyReport]:
        """Applies the ranges that became complete, for each cluster this invocation touched,
        each in its share of the time left; then, while the windows of the requests it took
        last, looks again every LOOK_INTERVAL_MS, the last look starting after the window's
        end (hdfs_events/continue_request.py: requests of the window dropped as duplicates rely
        on it).

        A failure is logged and counted, not raised, and ends the cluster's looks: the requests
        were processed, and the cluster's next continue request (every invocation of its event
        messages sends one; a later window's is sent) tries again. Out of time with ranges
        left, it asks for another invocation to go on. Its log lines start "index ": the saved
        Logs Insights query and the alarms' descriptions (stacks/saved_queries.py,
        stacks/consumer_alarms.py) match them."""
        reports: dict[str, ApplyReport] = {}
        if self.sequencer is not None:
            clusters = sorted(self.to_apply)
            looks: dict[str, int] = {}  # cluster -> when its last look started
            for left, cluster in zip(range(len(clusters), 0, -1), clusters, strict=True):
                now = looks[cluster] = self.clock_ms()
                self._apply_cluster(cluster, now + max(0, deadline_ms - now) // left, reports)
            self._look_while_windows_last(looks, deadline_ms, reports)
        self.to_apply.clear()
        self.windows.clear()
        self.requested = False
        return reports

    def _look_while_windows_last(self, looks: dict[str, int], deadline_ms: int,
                                 reports: dict[str, ApplyReport]) -> None:
        ends = {cluster: look_until(end) for cluster, end in self.windows.items()}
        pending = {cluster: end for cluster, end in ends.items()
                   if cluster in reports and not reports[cluster].more and looks[cluster] < end}
        # Bounded by a count as well: a clock that stands still cannot hold the invocation. At
        # least one more look: a first look that began inside the window and ended past it.
        now = self.clock_ms()
        rounds = max(0, max(pending.values(), default=now) - now) // LOOK_INTERVAL_MS + 2
        while pending and rounds > 0 and self.clock_ms() < deadline_ms:
            rounds -= 1
            self.sleep(LOOK_INTERVAL_MS / 1000)
            for cluster, last_look in sorted(pending.items()):
                started = self.clock_ms()
                report = self._apply_cluster(cluster, deadline_ms, reports, look=True)
                if report is None or report.more or started >= last_look:
                    del pending[cluster]
        for cluster in sorted(pending):  # out of time inside a window: another looks on
            self._request(ContinueRequest(cluster, self.windows[cluster]),
                          f"{_progress_key(reports[cluster].position)}-look")

    def _apply_cluster(self, cluster: str, until_ms: int, reports: dict[str, ApplyReport], *,
                       look: bool = False) -> ApplyReport | None:
        """The cluster's complete ranges applied until `until_ms`; a `look` again first asks,
        without the lease, whether there is any. None: it failed."""
        assert self.sequencer is not None
        try:
            if look and not self.sequencer.ready(cluster, reports[cluster].position):
                return reports[cluster]
            report = self.sequencer.apply_ranges(cluster, until_ms)
        except Exception:
            self.logger.exception("index apply failed; the next message for the cluster "
                                  "tries again", extra={"cluster": cluster})
            self.telemetry.apply_failed(cluster)
            return None
        earlier = reports.get(cluster)
        reports[cluster] = report if earlier is None else earlier.followed_by(report)
        if report.more:
            self._request(ContinueRequest(cluster, self.windows.get(cluster)),
                          _progress_key(report.position))
        self.telemetry.applied(cluster, report, self.clock_ms())
        if report.skipped_messages:
            self.logger.warning("index skipped quarantined messages named by a manifest",
                                extra={"cluster": cluster, "messages": report.skipped_messages})
        for what, reason in report.bridged:
            self.logger.error("index passed a range whose manifest was lost", extra={
                "cluster": cluster, "range": what, "reason": reason})
        for skipped in report.skipped_events[:SKIPPED_LINES]:
            self.logger.warning("index skipped an event DynamoDB cannot store", extra={
                "cluster": cluster, "txid": skipped.txid, "index": skipped.event_index,
                "path": skipped.path, "reason": skipped.reason})
        return report

    def _check_sender(self, cluster: str, message: QueueMessage) -> None:
        problem = self.senders.problem(cluster, message.sender_id, message.group_id)
        if problem is not None:
            raise ForeignSender(cluster, problem)

    def _unreadable(self, message: QueueMessage, exc: Exception) -> Outcome:
        if isinstance(exc, ForeignSender):
            self.logger.error("message from a sender that is not its cluster's principal",
                              extra={"message_id": message.message_id, "cluster": exc.cluster,
                                     "sender_id": message.sender_id,
                                     "group_id": message.group_id})
            # Known clusters only as a dimension: a claimed name is the sender's word.
            known = exc.cluster in self.senders.principals
            self.telemetry.foreign_sender(exc.cluster if known else UNKNOWN_CLUSTER)
            return self._quarantine(message, str(exc))
        if isinstance(exc, (EnvelopeError, ManifestError)):
            return self._quarantine(message, str(exc))
        # Not a rule the contract names: say what broke, for whoever fixes the reader.
        return self._quarantine(message, f"unreadable message ({type(exc).__name__}): {exc}")

    def _quarantine(self, message: QueueMessage, reason: str) -> Outcome:
        reason = bounded_reason(reason)
        record = quarantine_record(message, reason, now_ms=self.clock_ms())
        self.lake.put(record.key, record.body, "application/json")
        cluster = cluster_hint(message)
        # Only the cluster's own principal may tell its index that a message is lost: another
        # sender could otherwise name a real message's deduplication id and make a range skip it.
        if (self.sequencer is not None and cluster != UNKNOWN_CLUSTER
                and self.senders.allows(cluster, message.sender_id)):
            if message.string_attribute(KIND_ATTRIBUTE) == KIND_MANIFEST:
                # Its range must not wait for it (sequencer._bridge_hole).
                self.sequencer.manifest_lost(cluster, message.message_id, reason)
            elif message.dedup_id:
                # A manifest may name it: its range goes on without it (counted), not stuck.
                self.sequencer.quarantined(cluster, message.dedup_id, reason)
            self.to_apply.add(cluster)
        self.logger.info("message quarantined", extra={
            "message_id": message.message_id, "reason": reason, "quarantine_key": record.key,
            "group_id": message.group_id})
        self.telemetry.quarantined(cluster_hint(message))
        return Outcome("quarantined", reason=reason)


def _progress_key(position: Position | None) -> str:
    """Where applying ranges stopped, down to the step of a walk, and a unique tail. Unique
    because it continues a chain: SQS drops a FIFO deduplication id it accepted in the last 5
    minutes, so keyed by the point alone, the request of an invocation that ran out of time
    where the one before it had (no time left to apply anything) was dropped and the index
    stalled until the cluster's next event. Apply invocations run one a cluster at a time (its
    FIFO group), so a duplicate chain (a retried invocation) costs an invocation, nothing
    more."""
    if position is None or position.txid is None:
        point = "start"
    else:
        step = "" if position.walk is None else f".{position.walk.step}"
        point = f"{position.txid}.{position.event_index}{step}"
    return f"{point}-{uuid.uuid4().hex}"


def _arrival_id(message: QueueMessage) -> str:
    return message.dedup_id or message.message_id


def cluster_hint(message: QueueMessage) -> str:
    """The cluster of an unreadable message, from its group id ("<cluster>:<group key>")."""
    head = (message.group_id or "").split(":", 1)[0]
    return head if CLUSTER_NAME.fullmatch(head) else UNKNOWN_CLUSTER
