"""The whole chain on one machine, as the demo, the end-to-end proof and the chain's benches
run it.

moto server on 127.0.0.1 stands in for AWS and is reached only through AWS_ENDPOINT_URL, as a
deployment reaches AWS. The resources come from the CDK app itself (the `local` environment's
synthesized templates deployed into moto's CloudFormation, tests/kit/local_cloud.py). The agent
is the real `hdfs-events-agent replay` in its own process; the consumer is the real handler in
its own process behind the local SQS event source mapping (tests/kit/lambda_process.py);
compaction and rollups are the real Glue entry scripts on a local SparkSession, given the lake as
Glue gives it (`s3://<bucket>`) and reaching the bucket through Hadoop's S3A connector
(glue_jobs/runtime.py).
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from tests.kit.sqs_lambda import queue_depth

if TYPE_CHECKING:
    from tests.kit.local_cloud import Assembly

REPO = Path(__file__).resolve().parents[2]
REGION = "eu-west-1"

# What a broken or hostile producer might put on the queue (Chain.send_poison): each must be
# quarantined with its reason, and none may block its message group.
POISON_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("this is not JSON", {}),
    ('{"v": 99, "events": []}', {}),
    (base64.b64encode(b"not gzip at all").decode(),
     {"encoding": {"DataType": "String", "StringValue": "gzip+base64"}}),
    (base64.b64encode(gzip.compress(b'{"v":1,"events":[{"cluster":"demo","txid":"x"}]}')).decode(),
     {"encoding": {"DataType": "String", "StringValue": "gzip+base64"}}),
]


@contextmanager
def local_aws() -> Iterator[str]:
    """A moto server on a free loopback port; the process environment points boto3 at it with
    throwaway credentials, so nothing here can reach a real account."""
    from moto.server import ThreadedMotoServer

    from tests.kit import moto_fast_query, moto_fast_scan, moto_fixes
    from tests.kit.long_lived_heap import freeze_survivors

    # moto's base-table Query sorts the whole table per call; our index has one partition per
    # directory, so an index of 100k entries took ~40 entries/s without this (same results).
    moto_fast_query.apply()
    moto_fast_scan.apply()  # and so does each Scan page: the gap repair's took ~172 s at 100k
    freeze_survivors()  # moto's state, kept for the run, out of every full collection
    # moto can lose DynamoDB writes and SQS messages under concurrency, and forgets FIFO
    # deduplication ids; the SQS fix also ends moto's pass over the whole queue per SQS call,
    # which made a backlog slow every call (tests/kit/moto_fixes.py, moto_fast_sqs.py).
    moto_fixes.apply()

    # werkzeug logs every request at INFO, and moto warns about every CloudFormation resource
    # type it skips (Glue, alarms, policies: see README): lines that bury the demo's own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("moto").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Tried to parse", category=UserWarning)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = dict(os.environ)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        os.environ.pop(name, None)
    os.environ.update({
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_SESSION_TOKEN": "local", "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    })
    try:
        yield endpoint
    finally:
        server.stop()
        os.environ.clear()
        os.environ.update(saved)


@dataclass
class AgentRun:
    exits: list[int] = field(default_factory=list)
    kills: int = 0
    # Of the kills, those that landed before the agent logged its replay done: the rest hit a
    # process that had shipped and checkpointed everything and was only exiting.
    mid_flight: int = 0


def _replays_done(log: Path) -> int:
    """How many `hdfs-events-agent replay` runs logged their end in `log`."""
    return log.read_text(encoding="utf-8").count("hdfs-events-agent.replay: done:") \
        if log.exists() else 0


@dataclass
class Chain:
    """One deployed local environment and a working directory."""

    endpoint: str
    outputs: dict[str, str]
    work: Path
    cluster: str = "demo"
    lambda_env: dict[str, str] = field(default_factory=dict)
    # The templates deployed, by stack name: what moto skips (the Glue tables) is read there.
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def deploy(cls, endpoint: str, work: Path, cluster: str = "demo",
               assembly: Assembly | None = None) -> Chain:
        """`assembly`: the `local` environment already synthesized (None: synthesized here)."""
        from tests.kit.local_cloud import deploy_to_moto, synth

        assembly = assembly or synth("local")
        outputs = deploy_to_moto(endpoint, "local", assembly=assembly)
        chain = cls(endpoint=endpoint, outputs=outputs, work=work, cluster=cluster,
                    templates=assembly.templates())
        chain.lambda_env = chain._function_environment()
        return chain

    # --- AWS handles ----------------------------------------------------------------------
    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION)

    @property
    def queue_url(self) -> str:
        return self.outputs["EventQueueUrl"]

    @property
    def bucket(self) -> str:
        return self.outputs["LakeBucketName"]

    def _function_environment(self) -> dict[str, str]:
        """The consumer's environment exactly as the stack defines it."""
        fn = self.client("lambda").get_function_configuration(
            FunctionName=self.outputs["IngestFunctionName"])
        return dict(fn.get("Environment", {}).get("Variables", {}))

    # --- the agent ------------------------------------------------------------------------
    def agent_config(self, name: str = "agent", max_message_bytes: int = 65536, *,
                     hdfs_uri: str | None = None, conf_dir: Path | None = None,
                     audit_dir: Path | None = None) -> Path:
        """agent.toml for `replay`, or with `hdfs_uri` and `conf_dir` also for `run` (the same
        checkpoint file: a backfill hands over to the live agent where it ended), or with
        `audit_dir` for `audit run` (the NameNode's audit log there, into the lake bucket)."""
        path = self.work / f"{name}.toml"
        live = "" if hdfs_uri is None else (
            f'\n[hdfs]\nuri = "{hdfs_uri}"\nconf_dir = "{conf_dir}"\n'
            f'\n[inotify]\npoll_timeout_ms = 100\n'
            f'\n[metrics]\nprometheus_port = 0\nheartbeat_interval_s = 0\n')
        if audit_dir is not None:
            live += (f'\n[audit]\nlog_dir = "{audit_dir}"\nbucket = "{self.bucket}"\n'
                     f'host = "namenode-1"\nstate_file = "{self.work / f"{name}.position.json"}"'
                     '\nflush_interval_s = 1\npoll_interval_ms = 100\nmetrics_interval_s = 0\n')
        path.write_text(
            f'cluster = "{self.cluster}"\n\n[sqs]\nqueue_url = "{self.queue_url}"\n\n'
            f'[checkpoint]\nstore = "file"\npath = "{self.checkpoint_path(name)}"\n'
            f'interval_ms = 200\n\n[filter]\ncover_dirs = []\nignore_patterns = []\n'
            f'\n[packing]\ngroup_by = "prefix:2"\nmax_message_bytes = {max_message_bytes}\nlinger_ms = 200\n'
            f'compress = true\n\n[progress]\ninterval_ms = 2000\n' + live, encoding="utf-8")
        return path

    def checkpoint_path(self, name: str = "agent") -> Path:
        return self.work / f"{name}.checkpoint.json"

    def replay(self, edits: Sequence[Path], *, kills: int = 0, seed: int = 0,
               kill_within_s: float = 0.6, log: Path | None = None,
               on_start: Callable[[int], None] | None = None,
               max_message_bytes: int = 65536, config: Path | None = None) -> AgentRun:
        """Runs `hdfs-events-agent replay` to completion, killing it with SIGKILL `kills` times
        and restarting it each time, as systemd would. Each kill comes at a random moment within
        `kill_within_s` after SQS first acknowledged a message of this run (a message on the
        queue, or the checkpoint moved): mid-flight, with events sent but not yet
        checkpointed, so the restart re-sends some. `AgentRun.mid_flight` counts the kills
        that came before the agent logged its replay done (a replay of a few seconds can
        finish inside the window)."""
        config = config or self.agent_config(max_message_bytes=max_message_bytes)
        checkpoint = self.checkpoint_path()
        cmd = [sys.executable, "-m", "onprem_agent.cli", "replay", "--config", str(config),
               "--edits", *map(str, edits)]
        rng, run = random.Random(seed), AgentRun()
        log_path = log or self.work / "agent.log"
        log_file = open(log_path, "a", encoding="utf-8")  # noqa: SIM115
        try:
            while True:
                finished_before = _replays_done(log_path)
                proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, cwd=REPO)
                if on_start:
                    on_start(len(run.exits))
                if run.kills < kills and self.shipping(proc, checkpoint, 60, self.queue_depth):
                    time.sleep(rng.uniform(0, kill_within_s))
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGKILL)
                        proc.wait()
                        run.kills += 1
                        run.mid_flight += _replays_done(log_path) == finished_before
                        run.exits.append(-9)
                        continue
                code = proc.wait(timeout=1800)
                run.exits.append(code)
                if code != 0:
                    raise RuntimeError(f"agent exited {code}; see {log_file.name}")
                return run
        finally:
            log_file.close()

    @staticmethod
    def shipping(proc: subprocess.Popen, checkpoint: Path, timeout_s: float,
                 queue_depth: Callable[[], int] | None = None) -> bool:
        """Waits until SQS has acknowledged some of the agent's events: its checkpoint moves,
        or (with `queue_depth`) the event queue holds more messages than when it started (only
        the agent adds to it; the consumer takes away). A fast replay's checkpoint may move only
        at its end: a message of a quiet group lingers open and holds it back."""
        def moved() -> tuple[str, int]:
            return (checkpoint.read_text() if checkpoint.exists() else "",
                    queue_depth() if queue_depth else 0)

        (before, depth), deadline = moved(), time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None:
            stamp, now = moved()
            if stamp != before or now > depth:
                return True
            time.sleep(0.02)
        return False

    # --- the consumer ---------------------------------------------------------------------
    def start_consumer(self, *, fail_share: float = 0.0, visibility_timeout_s: int = 5,
                       idle_polls: int = 3) -> subprocess.Popen:
        stop, stats = self.work / "consumer.stop", self.work / "consumer-stats.json"
        stop.unlink(missing_ok=True)
        stats.unlink(missing_ok=True)
        log_dir = self.work / "cloudwatch"
        log_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.lambda_env}
        return subprocess.Popen(
            # The function's two event sources, as the stack maps them.
            [sys.executable, "-m", "tests.kit.lambda_process", self.queue_url,
             self.outputs["ApplyQueueUrl"], "--stop-file", str(stop),
             "--stats", str(stats), "--fail-share", str(fail_share),
             "--visibility-timeout", str(visibility_timeout_s), "--idle-polls", str(idle_polls)],
            stdout=open(log_dir / "ingest.log", "w", encoding="utf-8"),
            stderr=subprocess.STDOUT, cwd=REPO, env=env)

    def stop_consumer(self, proc: subprocess.Popen, timeout_s: float = 600) -> dict[str, Any]:
        """Lets the consumer drain the queue, then stops it; returns its counters."""
        (self.work / "consumer.stop").touch()
        code = proc.wait(timeout=timeout_s)
        if code != 0:
            raise RuntimeError(f"consumer exited {code}; see {self.work / 'cloudwatch/ingest.log'}")
        return json.loads((self.work / "consumer-stats.json").read_text())

    def queue_depth(self, url: str | None = None) -> int:
        return queue_depth(self.client("sqs"), url or self.queue_url)

    def send_poison(self, bodies: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Puts malformed messages on the event queue, as a broken or hostile producer would."""
        sqs = self.client("sqs")
        for i, (body, attributes) in enumerate(bodies):
            sqs.send_message(QueueUrl=self.queue_url, MessageBody=body,
                             MessageAttributes=attributes, MessageGroupId=f"poison-{i}",
                             MessageDeduplicationId=f"poison-{i}-{time.time_ns()}")

    # --- the lake -------------------------------------------------------------------------
    def count_objects(self, prefix: str) -> int:
        pages = self.client("s3").get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix)
        return sum(page.get("KeyCount", 0) for page in pages)

    @property
    def lake_uri(self) -> str:
        """The lake as a Glue job run is given it."""
        return f"s3://{self.bucket}"


def run_glue_job(module: str, *args: str, log: Path) -> dict[str, Any]:
    """Runs a Glue entry script locally (`python -m glue_jobs.X --source ... --target ...`) and
    returns the JSON report it prints last."""
    with open(log, "a", encoding="utf-8") as err:
        done = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=err, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{module} exited {done.returncode}; see {log}")
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}
