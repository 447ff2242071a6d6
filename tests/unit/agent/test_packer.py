"""EventPacker: per-group messages in order, bounded by size and linger."""

from __future__ import annotations

import base64
import gzip
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdfs_events.envelope import EnvelopeError, decode_message, encode_message
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.ids import group_key, message_group_id
from onprem_agent.editlog import read_ops
from onprem_agent.packer import EventPacker, PackedMessage, prefix_group_keys
from onprem_agent.translate import translate_ops


def ev(txid: int, path: str, index: int = 0, type_: EventType = EventType.CLOSE,
       dst: str | None = None, owner: str | None = None) -> HdfsEvent:
    return HdfsEvent(cluster="c1", txid=txid, index=index, type=type_, path=path, dst_path=dst,
                     size=txid, timestamp=1_700_000_000_000 + txid, owner=owner)


def decoded(messages: list[PackedMessage]) -> list[list[HdfsEvent]]:
    return [decode_message(m.wire.body, m.wire.attributes) for m in messages]


def added(packer: EventPacker, events: list[HdfsEvent], chunk: int) -> list[PackedMessage]:
    """`events` added `chunk` at a time (the pipeline adds a chunk's events in one call), each
    call's `after` the txid before its first event; what they sealed."""
    return [m for i in range(0, len(events), chunk)
            for m in packer.add(events[i:i + chunk], now=0.0, after=events[i].txid - 1)]


# One event a call, and chunks of events of several groups whose runs fill messages part way.
CHUNKS = pytest.mark.parametrize("chunk", [1, 37])


def test_events_of_one_group_pack_into_one_message_in_order() -> None:
    packer = EventPacker("c1", linger_s=10)
    events = [ev(t, f"/data/a/f{t}") for t in range(1, 50)]
    out = [m for e in events for m in packer.add((e,), now=0.0)]
    assert out == []
    out = packer.flush()
    assert len(out) == 1
    assert decoded(out)[0] == events
    assert out[0].txids == tuple(range(1, 50))
    assert out[0].wire.group_id == message_group_id("c1", "/data/a/x", "prefix:2")


@CHUNKS
def test_interleaved_groups_get_separate_messages_each_in_order(chunk: int) -> None:
    packer = EventPacker("c1", linger_s=10)
    events = [ev(t, f"/data/{'ab'[t % 2]}/f{t}") for t in range(1, 41)]
    assert added(packer, events, chunk) == []
    by_group = {m.wire.group_id: decoded([m])[0] for m in packer.flush()}
    assert by_group == {
        "c1:/data/a": [e for e in events if e.path.startswith("/data/a/")],
        "c1:/data/b": [e for e in events if e.path.startswith("/data/b/")],
    }


def test_rename_goes_to_the_group_of_its_source() -> None:
    packer = EventPacker("c1", linger_s=10)
    packer.add((ev(1, "/data/a/tmp/x", type_=EventType.RENAME, dst="/data/b/x"),), now=0.0)
    (message,) = packer.flush()
    assert message.wire.group_id == "c1:/data/a"


@CHUNKS
@pytest.mark.parametrize("compress", [True, False])
def test_no_message_exceeds_the_size_limit_and_nothing_is_lost(compress: bool, chunk: int
                                                               ) -> None:
    rng = random.Random(7)
    # Random owners make the compression ratio vary from message to message.
    events = [ev(t, "/data/a/f", owner="".join(rng.choices("abcdefghij", k=rng.randint(1, 256))))
              for t in range(1, 3000)]
    limit = 4096
    packer = EventPacker("c1", max_message_bytes=limit, linger_s=10, compress=compress)
    out = added(packer, events, chunk) + packer.flush()
    assert all(m.wire.size <= limit for m in out)
    assert [e for batch in decoded(out) for e in batch] == events
    # Re-split or not, a message holds back the checkpoint below its first txid.
    assert all(m.after is not None and m.after < m.txids[0] for m in out)
    assert packer.stats.resplits or not compress
    # Packing works toward the limit: messages are mostly well filled.
    full = [m.wire.size for m in out[:-1]]
    assert sum(full) / len(full) > 0.6 * limit


def test_messages_fill_close_to_a_64_kib_chunk_on_a_real_edit_log(edits_sample: Path) -> None:
    sample = list(translate_ops(read_ops(edits_sample), "c1"))
    events = [HdfsEvent(**{**{f: getattr(e, f) for f in e.__slots__}, "txid": 100 * i + e.txid,
                           "path": "/data/a" + e.path})
              for i in range(2500) for e in sample]
    packer = EventPacker("c1", group_by="single", linger_s=10)
    out = [m for e in events for m in packer.add((e,), now=0.0)] + packer.flush()
    assert all(m.wire.size <= 65_536 for m in out)
    # The first messages teach the packer the compression ratio; from then on they are full.
    assert len(out) > 5
    assert min(m.wire.size for m in out[2:-1]) > 0.85 * 65_536
    assert sum(m.wire.event_count for m in out) == len(events)


def test_a_single_event_larger_than_the_limit_is_sent_alone() -> None:
    packer = EventPacker("c1", max_message_bytes=1024, linger_s=10, compress=False)
    big = ev(2, "/data/a/f", owner="x" * 250, dst="/data/b/" + "y" * 250 + "/" + "z" * 250)
    out = packer.add((ev(1, "/data/a/f"),), 0.0) + packer.add((big,), 0.0) + packer.flush()
    assert [m.wire.event_count for m in out] == [1, 1]
    assert decoded(out)[1] == [big]


def test_linger_seals_a_message_once_its_first_event_is_old_enough() -> None:
    packer = EventPacker("c1", linger_s=0.2)
    packer.add((ev(1, "/data/a/f"),), now=10.0)
    packer.add((ev(2, "/data/b/f"),), now=10.1)
    packer.add((ev(3, "/data/a/g"),), now=10.15)
    assert packer.next_deadline() == pytest.approx(10.2)
    assert packer.expired(10.19) == []
    (first,) = packer.expired(10.2)
    assert first.wire.group_id == "c1:/data/a" and first.wire.event_count == 2
    assert packer.next_deadline() == pytest.approx(10.3)
    (second,) = packer.expired(11.0)
    assert second.wire.group_id == "c1:/data/b"
    assert packer.next_deadline() is None


def test_a_due_message_stays_open_and_grows_while_its_group_has_one_unacknowledged() -> None:
    # Sealed now it would only queue behind its group's message in flight; open, it takes
    # what a slow queue would otherwise get as many small messages.
    packer = EventPacker("c1", linger_s=0.2)
    packer.add((ev(1, "/data/a/f"),), now=10.0)
    packer.add((ev(2, "/data/b/f"),), now=10.0)
    in_flight = {"c1:/data/a"}
    (b,) = packer.expired(10.5, in_flight.__contains__)
    assert b.wire.group_id == "c1:/data/b"
    packer.add((ev(3, "/data/a/g"),), now=10.6)
    assert packer.expired(10.7, in_flight.__contains__) == []
    in_flight.clear()  # acknowledged
    (a,) = packer.expired(10.7, in_flight.__contains__)
    assert a.wire.group_id == "c1:/data/a" and a.wire.event_count == 2
    assert packer.next_deadline() is None


def test_a_message_names_each_txid_once_and_keeps_the_txid_finished_when_it_opened() -> None:
    packer = EventPacker("c1", linger_s=10)
    packer.add((ev(5, "/d/a", 0), ev(5, "/d/a", 1), ev(5, "/d/a", 2)), 0.0, after=4)
    packer.add((ev(6, "/d/a"),), 0.0, after=5)
    packer.add((ev(9, "/d/b"),), 0.0, after=8)
    packer.add((ev(10, "/d/a"),), 0.0, after=9)
    assert sorted(packer.open_afters()) == [4, 8]
    first, second = packer.flush()
    assert first.txids == (5, 6, 10) and first.after == 4
    assert first.wire.first == (5, 0) and first.wire.last == (10, 0)
    assert second.txids == (9,) and second.after == 8
    assert list(packer.open_afters()) == []


def test_same_events_give_the_same_dedup_id() -> None:
    def pack() -> list[str]:
        packer = EventPacker("c1", max_message_bytes=2048, linger_s=10)
        out = [m for t in range(1, 500) for m in packer.add((ev(t, "/d/a/f"),), 0.0)]
        return [m.wire.dedup_id for m in out + packer.flush()]

    first = pack()
    assert first == pack()
    assert len(set(first)) == len(first) > 1


@given(st.lists(st.sampled_from(["a", "b", "", "x y", "é"]), max_size=6).map("/".join),
       st.booleans(), st.integers(1, 4))
def test_fast_prefix_key_equals_the_contracts_group_key(path: str, absolute: bool,
                                                        depth: int) -> None:
    path = "/" + path if absolute else path
    assert prefix_group_keys(depth)([path, path]) == [group_key(path, f"prefix:{depth}")] * 2


@pytest.mark.parametrize("chunk", [1, 8])
def test_an_event_the_contract_refuses_travels_alone_after_its_groups_open_message(
        caplog: pytest.LogCaptureFixture, chunk: int) -> None:
    packer = EventPacker("c1", linger_s=10)
    deep = "/data/a/" + "/".join(["d" * 200] * 12)  # its parent dir is too long an index key
    before = [ev(t, f"/data/a/f{t}") for t in (1, 2, 3)]
    after = [ev(t, f"/data/a/f{t}") for t in (5, 6)]
    elsewhere = [ev(t, f"/data/b/f{t}") for t in (7, 8)]  # another group, in the same chunk
    out = added(packer, [*before, ev(4, deep), *after, *elsewhere], chunk) + packer.flush()
    assert [m.txids for m in out] == [(1, 2, 3), (4,), (5, 6), (7, 8)]
    assert packer.stats.rejected == 1
    with pytest.raises(EnvelopeError, match="event 0: field 'path': the index key"):
        decode_message(out[1].wire.body, out[1].wire.attributes)
    assert decoded([out[0], out[2], out[3]]) == [before, after, elsewhere]
    assert "(4, 0) breaks the contract" in caplog.text


@CHUNKS
@pytest.mark.parametrize("limit", [4096, 65_536])
def test_each_message_is_what_the_envelope_encoder_writes_reading_its_events_again(
        limit: int, chunk: int) -> None:
    # The packer notes a message's keys, cluster and minor as events come (encode_written);
    # with re-splits and directory SNAPSHOTs (minor 1) here and there, every message is the
    # one encode_message makes from its events.
    rng = random.Random(3)
    events = []
    for t in range(1, 4000):
        # Random owners make the compression ratio vary from message to message.
        event = ev(t, f"/data/{'ab'[t % 2]}/f",
                   owner="".join(rng.choices("abcdefghij", k=rng.randint(1, 256))))
        if rng.random() < 0.002:
            event = replace(event, type=EventType.SNAPSHOT, inode_type=INodeType.DIRECTORY,
                            children_num=t)
        events.append(event)
    packer = EventPacker("c1", max_message_bytes=limit, linger_s=10)
    out = added(packer, events, chunk) + packer.flush()
    assert packer.stats.resplits or limit > 4096
    minors = set()
    for message in out:
        held = decode_message(message.wire.body, message.wire.attributes)
        again = encode_message(held, group_id=message.wire.group_id)
        assert message.wire == again
        minors.add(json.loads(gzip.decompress(base64.b64decode(again.body))).get("minor", 0))
    assert minors == {0, 1}


def test_an_event_of_another_cluster_is_refused_when_added() -> None:
    packer = EventPacker("c1", linger_s=10)
    packer.add((ev(1, "/data/a/f"),), now=0.0)
    with pytest.raises(ValueError, match="of cluster 'c2'; this packer packs 'c1'"):
        packer.add((replace(ev(2, "/data/a/g"), cluster="c2"),), now=0.0)
