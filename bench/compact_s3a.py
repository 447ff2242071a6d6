"""What Hadoop's S3A connector costs the compaction job locally: glue_jobs.compaction_run.compact
reading raw/ from and publishing curated/ into a bucket of a moto server through S3A, beside the
same job on the same input on file://, in the same run.

    python -m bench.compact_s3a [--events 200000] [--duplicates 0.05] [--out bench-out/compact_s3a.json]
                                [--file-result bench-out/compact.json]

Input: bench.compact's generated raw lake (cached under bench-out/), uploaded object by object
with boto3 into the moto server's bucket under raw/ (not timed). Each contender runs in a fresh
subprocess on local[2], one after the other, timed around compact() alone (the session's start
is not in either figure):
- `s3a`: source s3://bench, target s3://bench/out (s3a:// through glue_jobs.runtime.s3a_conf,
  from AWS_ENDPOINT_URL like every local job run); its catalog, watermark and quarantine go
  through boto3 to the same server;
- `file`: bench.compact's `spark` contender, the local file system; with `--file-result`, the
  one bench.compact ran on this same cached input in this run (its JSON), not run again.
Both must publish exactly the distinct events. Speed: input rows (duplicates included) per wall
second; the s3a run also reports the HEAD, LIST and GET requests S3A made (its own counters).
moto server runs in this process on 127.0.0.1: the ratio is what S3A and an HTTP object store
add (request round trips, commit by copy-and-delete rename), not a network.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench import OUT_DIR
from bench.compact import REPO, _spark, contender, input_lake, timed_compaction

BUCKET = "bench"
TARGET = f"s3://{BUCKET}/out"
_AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


def upload(s3: Any, lake: Path) -> int:
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={
        "LocationConstraint": _AWS["AWS_REGION"]})
    objects = sorted(p for p in (lake / "raw").rglob("*.jsonl.gz") if p.is_file())
    for path in objects:
        s3.put_object(Bucket=BUCKET, Key=path.relative_to(lake).as_posix(),
                      Body=path.read_bytes())
    return len(objects)


# S3A's own counters (Hadoop's S3AStorageStatistics) of the HTTP requests it made, by verb.
_S3A_REQUESTS = {"HEAD": ("object_metadata_request",),
                 "LIST": ("object_list_request", "object_continue_list_request"),
                 "GET": ("action_http_get_request",)}


def run_s3a() -> dict:
    """The child: compact() between s3:// URIs of the moto server named by AWS_ENDPOINT_URL,
    with the requests S3A made for it (reads, writes and the commit's renames)."""
    from glue_jobs.runtime import s3a_conf
    from glue_jobs.storage import store_for

    spark = _spark(conf=s3a_conf())
    jvm = spark._jvm
    # Spark's tasks and its driver share this cached instance in a local session.
    s3a = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(f"s3a://{BUCKET}/"),
                                                  spark._jsc.hadoopConfiguration())
    before = _s3a_requests(s3a)
    result = timed_compaction(spark, store_for(f"s3://{BUCKET}"), store_for(TARGET))
    after = _s3a_requests(s3a)
    return {**result, "s3_requests": {verb: after[verb] - before[verb] for verb in after}}


def _s3a_requests(s3a: Any) -> dict[str, int]:
    stats = s3a.getStorageStatistics()
    return {verb: sum(stats.getLong(name) or 0 for name in names)
            for verb, names in _S3A_REQUESTS.items()}


def file_result(compact_json: Path, events: int, duplicates: float) -> dict[str, Any]:
    """bench.compact's `spark` contender from its JSON: the same job on file:// over the same
    cached input (bench.compact.input_lake of the same events and duplicates)."""
    ran = json.loads(compact_json.read_text())
    if (ran["events"], ran["duplicates"]) != (events, duplicates):
        raise SystemExit(f"bench.compact_s3a: --file-result {compact_json} compacted "
                         f"{ran['events']} events, duplicates {ran['duplicates']}; this run "
                         f"compacts {events}, duplicates {duplicates}: not the same input")
    return ran["results"]["spark"]


def measure(events: int, duplicates: float, file_from: Path | None = None) -> dict[str, Any]:
    import boto3
    from moto.server import ThreadedMotoServer

    lake = input_lake(events, duplicates)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request lines
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {**{k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}, **_AWS,
           "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    try:
        s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"],
                          region_name=_AWS["AWS_REGION"],
                          aws_access_key_id=_AWS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=_AWS["AWS_SECRET_ACCESS_KEY"])
        objects = upload(s3, lake)
        done = subprocess.run([sys.executable, "-m", "bench.compact_s3a", "--child"], cwd=REPO,
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = [x for x in done.stderr.splitlines() if x.strip()][-1:] or ["no output"]
            raise SystemExit(f"bench.compact_s3a: the s3a run failed: {last[0]}")
        s3a = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.stop()
    results = {"s3a": s3a, "file": (file_result(file_from, events, duplicates) if file_from
                                    else contender("spark", lake))}
    for name, r in results.items():
        if r["rows_out"] != events:
            raise SystemExit(f"bench.compact_s3a: {name} published {r['rows_out']} rows, "
                             f"expected the {events} distinct events")
        r["rows_per_s"] = r["rows_in"] / r["seconds"]
    return {"events": events, "duplicates": duplicates, "objects": objects, "results": results,
            "ratio_s3a_over_file": results["s3a"]["rows_per_s"] / results["file"]["rows_per_s"],
            "load_average": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.compact_s3a",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="distinct events")
    parser.add_argument("--duplicates", type=float, default=0.05,
                        help="fraction of events sent twice (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "compact_s3a.json")
    parser.add_argument("--file-result", type=Path,
                        help="bench.compact's JSON of this run on the same input: its spark "
                             "contender is the file:// run (the smoke, after bench.compact)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_s3a()))
        return 0
    OUT_DIR.mkdir(exist_ok=True)
    result = measure(args.events, args.duplicates, args.file_result)
    print(f"compaction of {result['results']['s3a']['rows_in']:,} input rows "
          f"({args.events:,} distinct, {result['objects']} objects), local[2]")
    for name, r in result["results"].items():
        print(f"{name:<5} {r['seconds']:>8.1f} s {r['rows_per_s']:>10,.0f} rows/s "
              f"{r['files']:>4} files")
    requests = result["results"]["s3a"]["s3_requests"]
    print("S3 requests of the s3a run: " + ", ".join(f"{n:,} {verb}" for verb, n in
                                                      requests.items())
          + f" for {result['objects']} raw objects")
    print(f"S3A on moto / file:// rows/s: {result['ratio_s3a_over_file']:.2f} "
          f"(load {os.getloadavg()[0]:.1f})")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
