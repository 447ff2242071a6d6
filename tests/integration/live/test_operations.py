"""Day-2 operations: the Prometheus endpoint, the CloudWatch heartbeat and `status`."""

from __future__ import annotations

import argparse
import urllib.request

import boto3

from hdfs_events import names
from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.commands import status
from onprem_agent.lease import Lease
from onprem_agent.opsmetrics import AgentReadings, Heartbeat, start_prometheus
from tests.integration.live.conftest import STATE_TABLE

CLUSTER = "prod"


def fixed_readings(**values) -> AgentReadings:
    defaults = dict(events_read=120, events_sent=100, send_errors=2, txid_lag=7,
                    seconds_lag=1.5, checkpoint_txid=4242, leader=1, gaps=0,
                    namenode_unavailable=0)
    merged = defaults | values
    return AgentReadings(**{k: (lambda v=v: v) for k, v in merged.items()})


def test_prometheus_endpoint_serves_the_agents_figures():
    _, server, _ = start_prometheus(CLUSTER, fixed_readings(), port=0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        server.shutdown()
    assert 'hdfs_events_agent_txid_lag{cluster="prod"} 7.0' in text
    assert 'hdfs_events_agent_events_sent_total{cluster="prod"} 100.0' in text
    assert 'hdfs_events_agent_checkpoint_txid{cluster="prod"} 4242.0' in text
    assert 'hdfs_events_agent_leader{cluster="prod"} 1.0' in text


def test_heartbeat_puts_the_alarm_metric_and_deltas(moto_endpoint):
    sent = [100]
    readings = fixed_readings()
    readings = AgentReadings(**{**{f: getattr(readings, f) for f in readings.__slots__},
                                "events_sent": lambda: sent[0]})
    beat = Heartbeat(CLUSTER, readings, interval_s=3600)
    beat.beat()
    sent[0] = 130
    beat.beat()
    cw = boto3.client("cloudwatch")

    def values(metric: str) -> list[float]:
        stats = cw.get_metric_statistics(
            Namespace=names.METRICS_NAMESPACE, MetricName=metric,
            Dimensions=[{"Name": names.DIMENSION_CLUSTER, "Value": CLUSTER}],
            StartTime="2000-01-01T00:00:00Z", EndTime="2100-01-01T00:00:00Z", Period=86400,
            Statistics=["Sum"])
        return [p["Sum"] for p in stats["Datapoints"]]

    assert values(names.METRIC_AGENT_HEARTBEAT) == [2.0]
    assert values(names.METRIC_AGENT_EVENTS_SENT) == [130.0]  # 100, then 30 more
    assert values(names.METRIC_NAMENODE_UNAVAILABLE) == [0.0]  # sent with every beat
    assert values(names.METRIC_AGENT_LAG_TXIDS) == [14.0]
    assert beat.beats == 2


def test_status_shows_checkpoint_leader_and_lag(state_table, tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text(f'''cluster = "{CLUSTER}"
[sqs]
queue_url = "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"
[checkpoint]
store = "dynamodb"
table = "{STATE_TABLE}"
[lease]
enabled = true
''')
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(4242)
    lease = Lease(STATE_TABLE, CLUSTER, duration_s=30, holder_id="edge1:77:abc")
    assert lease.try_acquire()
    _, server, _ = start_prometheus(CLUSTER, fixed_readings(), port=0)
    try:
        code = status.run(argparse.Namespace(
            config=path, cluster=None,
            metrics_url=f"http://127.0.0.1:{server.server_port}/metrics"))
    finally:
        server.shutdown()
    out = capsys.readouterr().out
    assert code == 0
    assert "checkpoint: 4242 (dynamodb)" in out
    assert "leader:     edge1:77:abc (epoch 1" in out
    assert "lag:        7 txids, 2 s behind the NameNode" in out


def test_status_says_when_the_agent_is_not_running(state_table, tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text(f'cluster = "{CLUSTER}"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    f'[checkpoint]\nstore = "dynamodb"\ntable = "{STATE_TABLE}"\n')
    code = status.run(argparse.Namespace(config=path, cluster=None,
                                         metrics_url="http://127.0.0.1:1/metrics"))
    out = capsys.readouterr().out
    assert code == 1
    assert "checkpoint: none yet" in out and "leader:     no lease configured" in out
    assert "lag:        unknown" in out
