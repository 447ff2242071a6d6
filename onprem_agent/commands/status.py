"""`hdfs-events-agent status --config agent.toml`: checkpoint, lag and leader.

The checkpoint comes from its store, the leader from the lease item, the lag from the running
agent's Prometheus endpoint (no JVM, no NameNode call). Exit 0 when everything could be read,
1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

_METRICS_TIMEOUT_S = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--cluster", default=None, help="override [cluster]")
    parser.add_argument("--metrics-url", default=None,
                        help="the agent's /metrics URL (default: from [metrics])")


def run(args: argparse.Namespace) -> int:
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.checkpoint import CheckpointError, open_checkpoint_store
    from onprem_agent.config import load_config
    from onprem_agent.lease import Lease, LeaseError
    from onprem_agent.live.settings import load_live_settings

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        settings = load_live_settings(config)
    except ConfigError as exc:
        print(f"hdfs-events-agent status: {exc}", file=sys.stderr)
        return 1
    ok = True
    print(f"cluster:    {config.cluster}")
    try:
        txid = open_checkpoint_store(config).load()
        print(f"checkpoint: {txid if txid is not None else 'none yet'} "
              f"({config.checkpoint.store})")
    except CheckpointError as exc:
        print(f"checkpoint: unreadable: {exc}")
        ok = False
    if settings.lease.enabled:
        try:
            lease = Lease(settings.lease.table, config.cluster,
                          duration_s=settings.lease.duration_s)
            state = lease.read()
            now = time.time()
            if state.is_live(now):
                print(f"leader:     {state.holder} (epoch {state.epoch}, lease for another "
                      f"{state.expires_at - now:.0f} s)")
            else:
                print(f"leader:     none (lease free or expired; epoch {state.epoch})")
        except LeaseError as exc:
            print(f"leader:     unreadable: {exc}")
            ok = False
    else:
        print("leader:     no lease configured (single agent)")
    url = args.metrics_url or (f"http://{settings.metrics.prometheus_addr}:"
                               f"{settings.metrics.prometheus_port}/metrics")
    metrics = read_metrics(url) if settings.metrics.prometheus_port or args.metrics_url else None
    if metrics is None:
        print(f"lag:        unknown (no agent metrics at {url}: is `run` up on this host?)")
        ok = False
    else:
        lag = metrics.get("hdfs_events_agent_txid_lag")
        seconds = metrics.get("hdfs_events_agent_seconds_lag")
        leading = metrics.get("hdfs_events_agent_leader")
        print(f"lag:        {_n(lag)} txids, {_n(seconds)} s behind the NameNode"
              f"{'' if leading else ' (this host is standby)'}")
    return 0 if ok else 1


def _n(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def read_metrics(url: str) -> dict[str, float] | None:
    """Sample name -> value of a Prometheus text page (labels dropped: one cluster per agent)."""
    try:
        with urllib.request.urlopen(url, timeout=_METRICS_TIMEOUT_S) as response:
            text = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError):
        return None
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, value = line.rpartition(" ")
        try:
            out[name_part.split("{", 1)[0]] = float(value)
        except ValueError:
            continue
    return out
