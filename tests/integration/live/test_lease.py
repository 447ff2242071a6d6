"""Two agents, one lease item in the agent-state table (moto server over HTTP)."""

from __future__ import annotations

import threading

from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.lease import Lease, LeaseKeeper, wait_until_leader

CLUSTER = "prod"
DURATION = 30


def agent(table: str, clock, name: str) -> Lease:
    return Lease(table, CLUSTER, duration_s=DURATION, holder_id=f"edge-{name}:1:{name}",
                 clock=clock)


def test_of_two_agents_asking_for_a_free_lease_only_the_first_wins(state_table, clock):
    # Sequential on purpose: moto's DynamoDB applies a conditional write without a lock, so two
    # truly simultaneous requests can both pass their condition there (DynamoDB itself checks
    # and writes atomically). The interleavings that matter are still all exercised.
    a, b = agent(state_table, clock, "a"), agent(state_table, clock, "b")
    for first, second in ((a, b), (b, a), (a, b)):
        assert first.try_acquire()
        assert not second.try_acquire()
        assert first.held and not second.held
        assert first.read().holder == first.holder_id
        first.release()
    assert a.read().holder is None


def test_a_live_lease_keeps_the_standby_out_until_it_expires(state_table, clock):
    a, b = agent(state_table, clock, "a"), agent(state_table, clock, "b")
    assert a.try_acquire() and a.epoch == 1
    assert not b.try_acquire()
    clock.advance(DURATION - 1)
    assert a.renew()
    clock.advance(DURATION - 1)
    assert not b.try_acquire()  # renewed: still A's
    clock.advance(2)  # A stopped renewing: its lease has run out
    assert not a.held
    assert b.try_acquire() and b.epoch == 2
    assert not a.renew()  # A learns it lost
    state = b.read()
    assert (state.holder, state.epoch) == (b.holder_id, 2)


def test_standby_takes_over_within_the_lease_time_and_the_checkpoint_never_regresses(
        state_table, clock):
    a, b = agent(state_table, clock, "a"), agent(state_table, clock, "b")
    store_a = DynamoCheckpointStore(state_table, CLUSTER)
    store_b = DynamoCheckpointStore(state_table, CLUSTER)
    assert a.try_acquire()
    for txid in range(1, 6):
        store_a.save(txid)
    crashed_at = clock()  # A dies without releasing

    stop, overlaps = threading.Event(), []

    def one_second_between_tries(event: threading.Event, _interval: float) -> bool:
        overlaps.append(a.held and b.held)
        clock.advance(1)
        return event.is_set()

    def standby() -> None:
        wait_until_leader(b, stop, interval_s=1, wait=one_second_between_tries)

    thread = threading.Thread(target=standby)  # the standby agent runs beside the dead leader
    thread.start()
    thread.join(60)
    stop.set()
    assert b.held and not any(overlaps)
    took_over_at = b.read().expires_at - DURATION
    assert crashed_at + DURATION < took_over_at <= crashed_at + DURATION + 1
    assert store_b.load() == 5  # B resumes from the shared checkpoint
    for txid in range(6, 9):
        store_b.save(txid)
    store_a.save(3)  # A wakes up and writes a stale checkpoint
    assert not a.renew()
    assert store_b.load() == 8


def test_keeper_reports_a_lost_lease(state_table, clock):
    a, b = agent(state_table, clock, "a"), agent(state_table, clock, "b")
    assert a.try_acquire()
    clock.advance(DURATION + 1)
    assert b.try_acquire()
    keeper = LeaseKeeper(a, interval_s=0.01).start()
    assert keeper.lost.wait(10)
    keeper.stop()


def test_release_lets_the_standby_in_at_once(state_table, clock):
    a, b = agent(state_table, clock, "a"), agent(state_table, clock, "b")
    assert a.try_acquire()
    a.release()
    assert b.try_acquire() and b.epoch == 2
