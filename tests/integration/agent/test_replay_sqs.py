"""`replay` against moto server over HTTP: order, completeness, dedup ids, signals, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import boto3

from hdfs_events.ids import message_group_id
from onprem_agent.commands.replay import replay
from onprem_agent.config import load_config
from tests.kit.workload import write_edit_log
from tests.unit.agent.chain import check_chain, check_covered

from .conftest import (
    REPO,
    Drainer,
    check_delivery,
    create_fifo_queue,
    event_keys_by_message,
    event_messages,
    event_txids_by_message,
    manifests,
    source_events,
)

AGENT = [sys.executable, "-m", "onprem_agent.cli", "replay"]
SIGTERM_OPS = 200_000  # edit-log ops the SIGTERM test replays (see there)


def agent_env(endpoint: str) -> dict[str, str]:
    return {**os.environ, "AWS_ENDPOINT_URL": endpoint, "PYTHONPATH": str(REPO)}


def test_every_event_arrives_once_in_group_order(moto_endpoint: str, tmp_path: Path,
                                                 agent_toml) -> None:
    edits = tmp_path / "edits.xml"
    write_edit_log(edits, ops=8000, seed=3)
    url = create_fifo_queue()
    # Small messages: many messages per group, so order across messages is exercised.
    config = load_config(agent_toml(url, max_message_bytes=2048, linger_ms=50))
    with Drainer(url) as drainer:
        assert replay(config, [edits], stop=threading.Event()) == 0
        received = drainer.finish()
    expected = source_events(edits, "c1")
    assert len(event_messages(received)) > 50
    dups = check_delivery(received, expected,
                          lambda e: message_group_id("c1", e.path, "prefix:2"))
    assert dups == 0
    saved = json.loads((tmp_path / "checkpoint.json").read_text())["txid"]
    assert saved == 8000  # the last op of the log, though it yields no event
    check_chain(manifests(received), event_txids_by_message(received), start=None, end=8000)


def test_the_manifest_chain_names_every_message_of_the_real_edit_log(
        moto_endpoint: str, tmp_path: Path, agent_toml, edits_sample: Path) -> None:
    url = create_fifo_queue()
    # Small messages in one group per path, a range closed every 10 ms: messages straddle
    # range ends.
    toml = agent_toml(url, max_message_bytes=1024, linger_ms=20, group_by="path")
    toml.write_text(toml.read_text().replace("interval_ms = 200", "interval_ms = 10"))
    with Drainer(url) as drainer:
        assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
        received = drainer.finish()
    expected = source_events(edits_sample, "c1")
    assert check_delivery(received, expected, lambda e: message_group_id("c1", e.path, "path")) == 0
    ranges = check_chain(manifests(received), event_txids_by_message(received), start=None,
                         end=88)
    assert all(r.group_id == "c1:#manifest" for r in received if r.manifest is not None)
    # A restart with the checkpoint at the end has nothing to close; one from an older
    # checkpoint continues the chain from there.
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    assert boto3.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"] == "0"
    (tmp_path / "checkpoint.json").write_text(json.dumps({"txid": ranges[0].end}))
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    again = Drainer(url).finish()
    check_chain(manifests(again), event_txids_by_message(again), start=ranges[0].end, end=88)


def test_a_resent_message_keeps_its_dedup_id_across_a_restart(
        moto_endpoint: str, tmp_path: Path, agent_toml, edits_sample: Path) -> None:
    url = create_fifo_queue()
    toml = agent_toml(url, max_message_bytes=1024, linger_ms=60_000)
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    sqs = boto3.client("sqs")
    count = int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"])
    # A crash before the checkpoint was written: the restart sends the same events again.
    (tmp_path / "checkpoint.json").unlink()
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    drainer = Drainer(url)
    received = drainer.finish()
    # Same events, same messages, same ids: SQS dropped every re-sent copy. (The manifests of
    # the two runs may close other ranges, so only the event messages are counted.)
    events = event_messages(received)
    assert count >= len(events) > 5
    assert len({r.dedup_id for r in events}) == len(events)
    assert check_delivery(received, source_events(edits_sample, "c1"),
                          lambda e: message_group_id("c1", e.path, "prefix:2")) == 0


def test_sigterm_flushes_saves_and_exits_0_then_restart_finishes(
        moto_endpoint: str, tmp_path: Path, agent_toml) -> None:
    # 200,000 ops: the replay takes ~3 s, so the first checkpoint (200 ms after SQS took a
    # message) comes well before the end. With 60,000 it ran in 1 s and the first checkpoint
    # was its last: the SIGTERM met an agent that had logged "done" and was exiting (-15).
    edits = tmp_path / "edits.xml"
    write_edit_log(edits, ops=SIGTERM_OPS, seed=4)
    url = create_fifo_queue()
    toml = agent_toml(url)
    env = agent_env(moto_endpoint)
    checkpoint = tmp_path / "checkpoint.json"
    with Drainer(url) as drainer:
        proc = subprocess.Popen([*AGENT, "--config", str(toml), "--edits", str(edits)],
                                env=env, stderr=subprocess.PIPE, text=True)
        # Wait for the first checkpoint, then stop it mid-way.
        while not checkpoint.exists() and proc.poll() is None:
            threading.Event().wait(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "SIGTERM" in err
        assert "replay: done" not in err, "the SIGTERM came after the replay ended"
        first = json.loads(checkpoint.read_text())["txid"]
        assert first < SIGTERM_OPS
        restart = subprocess.run([*AGENT, "--config", str(toml), "--edits", str(edits)],
                                 env=env, capture_output=True, text=True, timeout=300)
        assert restart.returncode == 0, restart.stderr
        assert f"after txid {first}" in restart.stderr
        received = drainer.finish()
    assert json.loads(checkpoint.read_text())["txid"] == SIGTERM_OPS
    expected = source_events(edits, "c1")
    check_delivery(received, expected, lambda e: message_group_id("c1", e.path, "prefix:2"))
    # The restart's ranges start at the checkpoint: no hole for the consumer.
    ranges = check_covered(manifests(received), event_keys_by_message(received),
                           [e.key for e in expected], start=None, end=SIGTERM_OPS)
    assert first in {r.end for r in ranges}
    assert any(r.after == first for r in ranges)


def test_a_missing_queue_stops_with_one_clear_line_and_exit_1(
        moto_endpoint: str, tmp_path: Path, agent_toml, edits_sample: Path) -> None:
    url = f"{moto_endpoint}/123456789012/missing.fifo"
    proc = subprocess.run([*AGENT, "--config", str(agent_toml(url)), "--edits",
                           str(edits_sample)], env=agent_env(moto_endpoint),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "NonExistentQueue" in errors[0] and url in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    # Only the leading ops without events may have been passed, never an unsent event.
    first_event = source_events(edits_sample, "c1")[0].txid
    checkpoint = tmp_path / "checkpoint.json"
    assert not checkpoint.exists() or json.loads(checkpoint.read_text())["txid"] < first_event


def test_a_config_error_names_key_and_file_and_exits_2(tmp_path: Path, agent_toml,
                                                       edits_sample: Path) -> None:
    toml = agent_toml("https://sqs.eu-west-1.amazonaws.com/1/q.fifo",
                      max_message_bytes=2_000_000)
    proc = subprocess.run([*AGENT, "--config", str(toml), "--edits", str(edits_sample)],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "agent.toml: [packing] max_message_bytes: must be <= 1048576" in proc.stderr
    flag = subprocess.run([*AGENT, "--config", str(toml), "--edits", str(edits_sample),
                           "--group-by", "nope", "--max-message-bytes", "65536"],
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert flag.returncode == 2 and "[packing] group_by" in flag.stderr


def test_dynamodb_checkpoint_store_resumes_a_replay(moto_endpoint: str, tmp_path: Path,
                                                    agent_toml, edits_sample: Path) -> None:
    from hdfs_events.names import STATE_ITEM_CHECKPOINT, STATE_PK, STATE_SK

    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="agent-state", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": STATE_PK, "KeyType": "HASH"},
                   {"AttributeName": STATE_SK, "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": STATE_PK, "AttributeType": "S"},
                              {"AttributeName": STATE_SK, "AttributeType": "S"}])
    url = create_fifo_queue()
    toml = agent_toml(url, cluster="c2")
    toml.write_text(toml.read_text().replace('path = "checkpoint.json"',
                                             'store = "dynamodb"\ntable = "agent-state"'))
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    item = dynamodb.get_item(TableName="agent-state", Key={
        STATE_PK: {"S": "c2"}, STATE_SK: {"S": STATE_ITEM_CHECKPOINT}})["Item"]
    assert item["txid"] == {"N": "88"}
    # A second run (another host) resumes after txid 88: nothing left to send.
    drainer = Drainer(url)
    first = len(drainer.finish())
    assert replay(load_config(toml), [edits_sample], stop=threading.Event()) == 0
    assert first > 0 and Drainer(url).finish() == []
