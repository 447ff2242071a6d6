"""gap_policy = "fsimage" in the agent's terms (onprem_agent/live/agent.py, ship_repairing_gaps):
a term that meets purged edits ships the GAP and ends with the checkpoint at E - 1; the index is
repaired from the image through T and the next term ships from T + 1, no manifest naming the
GAP's txid; an image that cannot repair the gap has it listed once. First over the real
run_term (LiveSource, Pipeline) against the NameNode double, then each branch with scripted
terms. The job's side: tests/unit/glue; the whole chain on a real NameNode:
tests/integration/hdfs/test_namespace_listing.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from onprem_agent.config import parse_config
from onprem_agent.live.agent import AgentState, gap_reporter, run_term, ship_repairing_gaps
from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.image_start import ImageStartStopped
from onprem_agent.live.settings import load_live_settings
from onprem_agent.live.stream import Gap, InotifyGapError, LiveStats
from onprem_agent.opsmetrics import Alerts
from tests.unit.agent.doubles import MemoryStore, RecordingSender, manifests_sent, sent_keys
from tests.unit.live.doubles import ListingDouble, NameNodeDouble, dir_entry, unlink

C = "prod"


class Terms:
    """Real terms (run_term) against a NameNode double: each term a new sender, one store;
    the last term ends when the stream is idle."""

    def __init__(self, nn: NameNodeDouble, converter: JavaBatchConverter, store: MemoryStore,
                 stop: threading.Event) -> None:
        doc = {"cluster": C, "sqs": {"queue_url": "https://q.fifo"},
               "checkpoint": {"path": "cp.json", "interval_ms": 10},
               "packing": {"linger_ms": 10}, "sending": {"shutdown_timeout_ms": 5000},
               "inotify": {"gap_policy": "fsimage", "poll_timeout_ms": 10},
               "fsimage": {"bucket": "lake", "inventory_job": "inventory"}}
        self.config = parse_config(doc, Path("agent.toml"))
        self.settings = load_live_settings(self.config)
        self.nn, self.converter, self.store, self.stop = nn, converter, store, stop
        self.listing = ListingDouble([dir_entry("/data")])
        self.senders: list[RecordingSender] = []
        self.gaps: list[Gap] = []
        self.started: list[tuple[int | None, int | None]] = []  # (checkpoint, list_gap_at)

    def ship(self, list_gap_at: int | None) -> None:
        self.started.append((self.store.load(), list_gap_at))
        self.senders.append(RecordingSender())
        run_term(self.config, self.settings, AgentState(stats=LiveStats()),
                 stream_source=self.nn.source(), converter=self.converter,
                 lister=self.listing, sender=self.senders[-1], checkpoint=self.store,
                 stop=self.stop, on_gap=self.gaps.append, on_idle=self.stop.set,
                 list_gap_at=list_gap_at)


@pytest.fixture
def converter(inotify_messages) -> JavaBatchConverter:
    return JavaBatchConverter(C, inotify_messages)


def namenode_with_a_gap() -> NameNodeDouble:
    """txids 1..20, one UNLINK each; 3..7 purged: a checkpoint of 2 meets the gap at 3."""
    nn = NameNodeDouble()
    for i in range(1, 21):
        nn.log(unlink(f"/data/{i}"))
    nn.purge_before(8)
    return nn


def test_the_index_repaired_through_t_the_next_term_ships_from_t_plus_1(converter):
    nn, store, stop = namenode_with_a_gap(), MemoryStore(2), threading.Event()
    terms = Terms(nn, converter, store, stop)
    asked: list[int] = []

    def repair(expected_txid: int) -> int:
        asked.append(expected_txid)
        nn.log(unlink("/data/after-the-image"))  # txid 21, after the image's txid 20
        return 20

    ship_repairing_gaps(terms.ship, repair=repair, checkpoint=store, stop=stop)
    assert asked == [3] and terms.gaps == [Gap(3, 8)]  # the alert still goes out
    assert terms.started == [(2, None), (20, None)]
    first, second = terms.senders
    # The first term ships the GAP and ends at E - 1: no range closes on the GAP's txid.
    assert sent_keys(first.sent) == [(C, 3, 0)]
    assert manifests_sent(first.sent) == []
    assert store.saves[0] == 20  # the repair's T, the first save past the checkpoint of 2
    # The next term reads after T and its ranges start at T: no manifest names txid 3.
    assert sent_keys(second.sent) == [(C, 21, 0)]
    assert [(m.after, m.end) for m in manifests_sent(second.sent)] == [(20, 21)]
    assert store.txid == 21 and nn.opened == [2, 20]


def test_an_image_that_cannot_repair_the_gap_has_it_listed_with_the_same_gap_key(converter):
    nn, store, stop = namenode_with_a_gap(), MemoryStore(2), threading.Event()
    terms = Terms(nn, converter, store, stop)
    asked: list[int] = []

    def repair(expected_txid: int) -> None:
        asked.append(expected_txid)

    ship_repairing_gaps(terms.ship, repair=repair, checkpoint=store, stop=stop)
    assert asked == [3] and terms.started == [(2, None), (2, 3)]
    first, second = terms.senders
    assert sent_keys(first.sent) == [(C, 3, 0)]
    # The same gap met again, the same GAP key, then the listing at the NameNode's txid 20.
    assert sent_keys(second.sent) == [(C, 3, 0), (C, 20, 0)]
    assert terms.listing.listed == ["/", "/data"] and store.txid == 20


# --- each branch, with scripted terms ---------------------------------------------------------


def scripted(store: MemoryStore, outcomes: list[tuple[int | None, Gap | None]],
             stop: threading.Event) -> tuple[Callable[[int | None], None], list[int | None]]:
    """ship(): each call takes the next outcome: the checkpoint its shutdown leaves, and the
    gap it ends with (None: it ends by `stop`)."""
    calls: list[int | None] = []

    def ship(list_gap_at: int | None) -> None:
        calls.append(list_gap_at)
        checkpoint, gap = outcomes.pop(0)
        if checkpoint is not None:
            store.save(checkpoint)
        if gap is None:
            stop.set()
            return
        raise InotifyGapError(gap, "fsimage")

    return ship, calls


def test_a_checkpoint_below_the_gap_sends_again_before_the_repair():
    store, stop = MemoryStore(50), threading.Event()
    # The last manifest not acknowledged in time: the checkpoint stays at 80, below 99.
    ship, calls = scripted(store, [(80, Gap(100, 150)), (99, Gap(100, 150)), (None, None)], stop)
    asked: list[int] = []

    def repair(expected_txid: int) -> int:
        asked.append(expected_txid)
        return 160

    ship_repairing_gaps(ship, repair=repair, checkpoint=store, stop=stop)
    assert calls == [None, None, None] and asked == [100]  # only once every range is in
    assert store.saves == [80, 99, 160]


def test_after_a_listed_gap_later_gaps_are_repaired_again():
    store, stop = MemoryStore(99), threading.Event()
    ship, calls = scripted(store, [(99, Gap(100, 150)), (199, Gap(200, 210)), (None, None)],
                           stop)
    images = iter([None, 300])
    asked: list[int] = []

    def repair(expected_txid: int) -> int | None:
        asked.append(expected_txid)
        return next(images)

    ship_repairing_gaps(ship, repair=repair, checkpoint=store, stop=stop)
    assert calls == [None, 100, None] and asked == [100, 200]
    assert store.txid == 300


def test_policy_stop_ends_at_the_first_gap():
    store, stop = MemoryStore(99), threading.Event()
    ship, calls = scripted(store, [(99, Gap(100, 150))], stop)
    with pytest.raises(InotifyGapError):
        ship_repairing_gaps(ship, repair=None, checkpoint=store, stop=stop)
    assert calls == [None]


def test_a_stop_while_the_image_is_indexed_ends_the_terms():
    store, stop = MemoryStore(99), threading.Event()
    ship, calls = scripted(store, [(99, Gap(100, 150)), (None, None)], stop)

    def repair(expected_txid: int) -> int:
        stop.set()  # SIGTERM while waiting for the job: ImageStart's wait ends so
        raise ImageStartStopped("stopped")

    with pytest.raises(ImageStartStopped):
        ship_repairing_gaps(ship, repair=repair, checkpoint=store, stop=stop)
    assert calls == [None] and store.saves == [99]


def test_a_stop_as_the_term_meets_the_gap_starts_no_repair():
    store, stop = MemoryStore(99), threading.Event()
    ship, calls = scripted(store, [(99, Gap(100, 150))], stop)

    def stopping_ship(list_gap_at: int | None) -> None:
        stop.set()  # SIGTERM while the term's shutdown shipped the GAP
        ship(list_gap_at)

    def repair(expected_txid: int) -> int:
        raise AssertionError("no repair after a stop")

    ship_repairing_gaps(stopping_ship, repair=repair, checkpoint=store, stop=stop)
    assert calls == [None]


def test_a_gaps_alert_says_inotify_gap_once(caplog):
    # The alert's subject says what it is; its message says what was lost.
    report = gap_reporter(C, Alerts(None), cloudwatch=False)
    with caplog.at_level("ERROR"):
        report(Gap(expected_txid=4, available_txid=15))
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == ("ALERT hdfs-events prod: inotify gap: needed txid 4 but the NameNode's first "
                    "available txid is 15; txids 4..14 were purged before they were read")
