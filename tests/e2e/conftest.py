"""The whole chain, once per session: moto server, the CDK app's `local` environment deployed
into moto's CloudFormation, the real agent killed with SIGKILL several times, the real consumer
failing a share of first deliveries, poison bodies on the queue, then the namespace index read
back and the Glue jobs (compaction, then rollups, in one process as the workflow runs them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from glue_jobs.storage import LakeStore, store_for
from hdfs_events import names
from hdfs_events.event import HdfsEvent
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.infra.synth import synthesized
from tests.kit.glue_workflow import reports, run_in_one_process
from tests.kit.index_check import IndexCheck, check_index
from tests.kit.local_chain import POISON_BODIES, Chain, local_aws
from tests.kit.sample_edits import SAMPLE_EDITS
from tests.kit.workload import write_edit_log

KILLS = 3
FAIL_SHARE = 0.3
# Below the job's default (1000): the generated log's burst of 300 UNLINKs is flagged.
MASS_DELETE_THRESHOLD = 200


@dataclass
class ChainRun:
    chain: Chain
    lake: LakeStore  # the lake bucket, read through boto3
    source: list[HdfsEvent]
    kills: int
    mid_flight_kills: int  # of them, before the agent logged its replay done
    consumer: dict[str, Any]
    dlq_depth: int
    compaction: dict[str, Any]
    rollups: dict[str, Any]
    log_path: Path
    index: IndexCheck  # the namespace index read back, against the source applied in order


@pytest.fixture(scope="session")
def chain_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChainRun]:
    work = tmp_path_factory.mktemp("e2e")
    with local_aws() as endpoint:
        # The session's one synth of `local` (tests/infra and the deployed tests read it too).
        chain = Chain.deploy(endpoint, work, assembly=synthesized()["local"])
        generated = work / "edits-generated.xml"
        write_edit_log(generated, ops=36_000, seed=11, start_txid=89, mass_delete=300)
        edits = [SAMPLE_EDITS, generated]
        # A failed record blocks its message group until its visibility timeout ends, and
        # the drain waits out one such timeout per failure in a group: 1 s instead of the
        # runner's 5 (the one consumer process never receives a record while invoking on it,
        # so a timeout ending mid-invocation lets no second receive in before the delete).
        # One empty receive (1 s long poll) ends the drain instead of 3: the consumer also
        # waits for a queue with nothing visible or in flight, which is what "drained" means.
        consumer = chain.start_consumer(fail_share=FAIL_SHARE, visibility_timeout_s=1,
                                        idle_polls=1)
        chain.send_poison(POISON_BODIES)
        # Smaller messages than the 64 KiB default make the replay long enough to be killed
        # several times mid-flight.
        run = chain.replay(edits, kills=KILLS, seed=5, max_message_bytes=12_288,
                           kill_within_s=0.15)
        stats = chain.stop_consumer(consumer, timeout_s=1200)
        dlq = sum(chain.queue_depth(chain.outputs[name]) for name in ("EventDlqUrl",
                                                                       "ApplyDlqUrl"))
        prefixes = [p for p in chain.lambda_env[names.ENV_INDEX_PREFIXES].split(",") if p]
        source = [e for path in edits
                  for e in translate_ops(read_ops(path), chain.cluster, source=str(path))]
        index = check_index(source, chain.lambda_env[names.ENV_INDEX_TABLE], prefixes)
        uri = chain.lake_uri  # the jobs read and write the bucket itself, through S3A
        jobs = run_in_one_process([
            ("glue_jobs.compact_events", ["--source", uri, "--target", uri]),
            ("glue_jobs.activity_rollups", ["--source", uri, "--target", uri,
                                            "--mass_delete_threshold", str(MASS_DELETE_THRESHOLD)]),
        ])
        assert jobs.returncode == 0, jobs.stderr[-4000:]
        compaction, rollups = reports(jobs)
        yield ChainRun(chain=chain, lake=store_for(uri), source=source, kills=run.kills,
                       mid_flight_kills=run.mid_flight, consumer=stats,
                       dlq_depth=dlq, compaction=compaction, rollups=rollups,
                       log_path=work / "cloudwatch/ingest.log", index=index)
