"""Building realistic messages: the real edit log translated and packed as the agent does."""

from __future__ import annotations

from collections.abc import Sequence

from hdfs_events.envelope import decode_message, encode_message
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.ids import message_group_id
from hdfs_events.manifest import manifests_for
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.kit.lambda_events import Sent, from_wire
from tests.kit.sample_edits import SAMPLE_EDITS


def sample_events(cluster: str = "prod") -> list[HdfsEvent]:
    return list(translate_ops(read_ops(SAMPLE_EDITS), cluster))


def pack(events: Sequence[HdfsEvent], *, per_message: int = 1000, compress: bool = True,
         strategy: str = "single", sent_ms: int = 1_421_135_900_000) -> list[Sent]:
    """Consecutive events of one group per message, in order (the agent's packing)."""
    out: list[Sent] = []
    run: list[HdfsEvent] = []
    group = None
    for e in events:
        g = message_group_id(e.cluster, e.path, strategy)
        if run and (g != group or len(run) == per_message):
            out.append(from_wire(encode_message(run, group_id=group, compress=compress),
                                 sent_ms=sent_ms))
            run = []
        group = g
        run.append(e)
    if run:
        out.append(from_wire(encode_message(run, group_id=group, compress=compress),
                             sent_ms=sent_ms))
    return out


def manifests(sent: Sequence[Sent], *, after: int | None = None,
              sent_ms: int = 1_421_135_900_000) -> list[Sent]:
    """The agent's manifest(s) for event messages `sent`: the range (after, their last txid]
    naming them all (every event of the range must be in `sent`)."""
    events = [e for s in sent for e in decode_message(s.body, {"encoding": s.encoding})]
    end = max(e.txid for e in events)
    return [Sent(body=m.to_json(), encoding=None, group_id=m.group_id, dedup_id=m.dedup_id,
                 sent_ms=sent_ms, kind="manifest")
            for m in manifests_for(events[0].cluster, after, end, [s.dedup_id for s in sent])]


def three_ranges() -> list[tuple[list[Sent], list[Sent]]]:
    """(event messages, manifests) of three consecutive txid ranges of the real edit log,
    (start, 23], (23, 57], (57, 85]: messages of 3 events grouped by top-level path."""
    events = sample_events("prod")
    out = []
    for after, end in [(None, 23), (23, 57), (57, 85)]:
        chunk = [e for e in events if (after is None or e.txid > after) and e.txid <= end]
        sent = pack(chunk, per_message=3, strategy="prefix:1")
        out.append((sent, manifests(sent, after=after)))
    return out


def with_manifests(sent: Sequence[Sent], **kw: object) -> list[Sent]:
    return [*sent, *manifests(sent, **kw)]  # type: ignore[arg-type]


def two_groups_batch() -> tuple[Sent, Sent, Sent]:
    """A1 (group /a), B1 (group /b), A2 (group /a), in the order Lambda may deliver them: three
    CREATEs each (txids 10-12, 20-22, 30-32), one message and one lake object each."""
    def created(prefix: str, first_txid: int) -> list[HdfsEvent]:
        return [HdfsEvent(cluster="prod", txid=first_txid + i, index=0, type=EventType.CREATE,
                          path=f"{prefix}/f{i}", timestamp=1_700_000_000_000 + i,
                          inode_type=INodeType.FILE, ctime=1_700_000_000_000, owner="etl",
                          group="etl", perms="0644", replication=3)
                for i in range(3)]

    (a1,), (b1,), (a2,) = (pack(created(p, t), strategy="prefix:1") for p, t in
                           [("/a", 10), ("/b", 20), ("/a", 30)])
    assert a1.group_id == a2.group_id != b1.group_id
    return a1, b1, a2
