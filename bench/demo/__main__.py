"""`make demo`: the whole chain on one machine, on the embedded default.

moto server stands in for AWS; the resources come from the CDK app's `local` environment; the
bundled real NameNode edit log and a generated workload go through the real agent (killed once
with SIGKILL mid-replay and restarted), the real consumer Lambda (behind a local SQS event
source mapping, with injected S3 throttling on a share of first deliveries) and the real Glue
jobs on a local SparkSession. Prints a summary; writes an HTML report to demo-out/index.html.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from bench.demo.chain import SAMPLE_EDITS, Chain, local_aws, run_glue_job, say
from bench.demo.index_check import check_index
from bench.demo.lake import POISON_BODIES, build_report, source_events
from bench.demo.report import text_summary, write_html
from bench.workload import write_edit_log
from hdfs_events import names

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "demo-out")
    parser.add_argument("--ops", type=int, default=30_000, help="ops in the generated edit log")
    parser.add_argument("--mass-delete", type=int, default=800)
    parser.add_argument("--kills", type=int, default=1, help="SIGKILLs of the agent mid-replay")
    parser.add_argument("--fail-share", type=float, default=0.1,
                        help="share of messages whose first delivery meets S3 throttling")
    args = parser.parse_args(argv)

    started = time.monotonic()
    out, work = args.out, args.out / "work"
    shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True)

    say("starting moto server on 127.0.0.1 (stands in for AWS; reached via AWS_ENDPOINT_URL)")
    with local_aws() as endpoint:
        say("deploying the CDK app's `local` environment into moto's CloudFormation")
        chain = Chain.deploy(endpoint, work)
        say(f"  event queue {chain.queue_url.rsplit('/', 1)[-1]}, lake bucket {chain.bucket}")

        generated = work / "edits-generated.xml"
        summary = write_edit_log(generated, ops=args.ops, seed=7, start_txid=89,
                                 mass_delete=args.mass_delete)
        edits = [SAMPLE_EDITS, generated]
        say(f"edit logs: the bundled real log (88 ops) + a generated one ({summary.ops:,} ops, "
            f"{summary.events:,} events, a mass delete of {args.mass_delete:,} files)")

        consumer = chain.start_consumer(fail_share=args.fail_share)
        chain.send_poison(POISON_BODIES)
        say(f"consumer Lambda running behind the local SQS event source mapping; "
            f"{len(POISON_BODIES)} poison messages put on the queue")

        t0 = time.monotonic()
        run = chain.replay(edits, kills=args.kills, seed=1,
                           on_start=lambda n: say("agent started" if n == 0 else
                                                  "agent killed with SIGKILL; restarted by its supervisor"))
        say(f"agent done in {time.monotonic() - t0:.1f} s (exits {run.exits}); draining the queue")
        while (depth := chain.queue_depth()) > 0:
            say(f"  {depth} message(s) on the queue, {chain.count_objects('raw/')} objects in raw/")
            time.sleep(10)
        stats = chain.stop_consumer(consumer)
        dlq = chain.queue_depth(chain.outputs["EventDlqUrl"])
        say(f"consumer: {stats['invocations']} invocations, {stats['records']} records, "
            f"{stats['failures']} failed and redelivered ({stats['injected_faults']} injected faults); "
            f"DLQ depth {dlq}")

        lake = out / "lake"
        raw_objects = chain.download("raw/", lake)
        chain.download("quarantine/", lake)
        say(f"copied {raw_objects} raw objects from the lake bucket for local Spark")
        uri = lake.resolve().as_uri()
        glue_log = work / "glue.log"
        say("compacting raw/ into Parquet (glue_jobs.compact_events on a local SparkSession)")
        compaction = run_glue_job("glue_jobs.compact_events", "--source", uri, "--target", uri,
                                  log=glue_log)
        say("computing activity rollups (glue_jobs.activity_rollups)")
        rollups = run_glue_job("glue_jobs.activity_rollups", "--source", uri, "--target", uri,
                               "--mass_delete_threshold", "500", log=glue_log)
        uploaded = chain.upload(lake / "curated", "curated/")
        say(f"published {uploaded} curated objects back to the lake bucket")

        prefixes = [p for p in chain.lambda_env.get(names.ENV_INDEX_PREFIXES, "").split(",") if p]
        index = check_index(edits, chain.cluster, chain.lambda_env[names.ENV_INDEX_TABLE],
                            prefixes)
        say(f"namespace index under {', '.join(prefixes)}: {index.entries} live entries "
            f"({index.learned} for paths older than the logs), "
            f"{'equal to' if index.exact else 'DIFFERENT from'} the events applied in order")
        for difference in index.differences:
            say(f"  {difference}")
        expected = source_events(edits, chain.cluster)
        report = build_report(lake=lake, expected=expected, consumer=stats,
                              log_path=work / "cloudwatch/ingest.log", compaction=compaction,
                              rollups=rollups, agent_kills=run.kills, dlq_depth=dlq,
                              index=index)
    page = write_html(report, out)
    print(text_summary(report))
    print(f"\nHTML report: {page}")
    print(f"Demo finished in {time.monotonic() - started:.0f} s.")
    exact = all(report.figures.get(f) == "yes" for f in (
        "Lake equals source exactly", "Index equals the events applied in order"))
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
