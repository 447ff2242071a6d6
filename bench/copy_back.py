"""The return channel's copy: Hadoop's DistCp from S3 (moto server, through S3A) into a real HDFS,
beside a plain boto3 download of the same objects, in the same run.

    python -m bench.copy_back [--files 8] [--mb-per-file 16] [--out bench-out/copy_back.json]
                              [--no-fixed-cost]

Ours: `hadoop distcp -overwrite s3a://bench/copy/ /bench/copy` as the copy worker runs it (an
edge node's launcher, tests/kit/hadoop/edge.py: Hadoop's DistCp class, LocalJobRunner, one map
at a time), timed from the command's start to its exit, so the JVM start and the job's set-up
are in the figure, as they are in every copy the worker makes. Then the bytes that landed are
counted on the NameNode. A DistCp of one 1-byte object first measures that fixed cost alone,
so the JSON also has DistCp's rate once running: bytes / (copy time - fixed cost)
(`--no-fixed-cost` skips it: the smoke, whose copy is the same command).

Baseline: boto3 get_object of each object, read to the end and
dropped, one after the other (what any copy spends just to fetch the bytes from this S3).
Both read the same moto server on 127.0.0.1, so the ratio is what DistCp adds (JVM, S3A,
the HDFS write pipeline), not the network.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3

from bench import OUT_DIR

BUCKET = "bench"
PREFIX = "copy/"
DEST = "/bench/copy"
_AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


def put_objects(s3: Any, files: int, size: int) -> dict[str, int]:
    block = os.urandom(1024 * 1024)
    body = (block * (size // len(block) + 1))[:size]
    keys = {}
    for i in range(files):
        key = f"{PREFIX}part-{i:05d}"
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        keys[key] = size
    return keys


def run_distcp(hadoop: Path, prefix: str = PREFIX, dest: str = DEST) -> float:
    start = time.perf_counter()
    done = subprocess.run([str(hadoop), "distcp", "-overwrite", f"s3a://{BUCKET}/{prefix}", dest],
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"distcp exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def run_boto3(s3: Any, keys: dict[str, int]) -> tuple[float, int]:
    start = time.perf_counter()
    read = 0
    for key in keys:
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
        while chunk := body.read(1024 * 1024):
            read += len(chunk)
    return time.perf_counter() - start, read


def measure(files: int, size: int, work: Path, fixed_cost: bool = True) -> dict[str, Any]:
    from moto.server import ThreadedMotoServer

    from tests.kit.hadoop.cluster import HdfsCluster
    from tests.kit.hadoop.edge import write_edge_conf, write_hadoop_launcher

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request lines
    os.environ.update(_AWS)
    os.environ.pop("AWS_PROFILE", None)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    hdfs = HdfsCluster.start(work / "cluster")
    try:
        conf = write_edge_conf(hdfs.conf_dir, work / "edge-conf", s3_endpoint=endpoint,
                               region=_AWS["AWS_DEFAULT_REGION"])
        hadoop = write_hadoop_launcher(work / "bin", conf)
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={
            "LocationConstraint": _AWS["AWS_DEFAULT_REGION"]})
        fixed_s = None
        if fixed_cost:
            s3.put_object(Bucket=BUCKET, Key="fixed-cost/one-byte", Body=b"x")
            fixed_s = run_distcp(hadoop, "fixed-cost/", "/bench/fixed-cost")
        keys = put_objects(s3, files, size)
        total = sum(keys.values())
        distcp_s = run_distcp(hadoop)
        [landed] = hdfs.run([["list", DEST]])
        if landed != {key[len(PREFIX):]: n for key, n in keys.items()}:
            raise SystemExit(f"distcp landed {len(landed)} files, {sum(landed.values())} bytes; "
                             f"expected {len(keys)} files, {total} bytes")
        boto3_s, read = run_boto3(s3, keys)
        if read != total:
            raise SystemExit(f"boto3 read {read} bytes of {total}")
    finally:
        hdfs.stop()
        server.stop()
    mb = total / 1e6
    return {
        "files": files, "bytes": total,
        "distcp": {"seconds": round(distcp_s, 3), "mb_per_s": round(mb / distcp_s, 2),
                   "fixed_cost_s": None if fixed_s is None else round(fixed_s, 3),
                   "running_mb_per_s": (round(mb / (distcp_s - fixed_s), 2)
                                        if fixed_s is not None and distcp_s > fixed_s
                                        else None),
                   "landed_files": len(landed), "landed_bytes": sum(landed.values())},
        "boto3_download": {"seconds": round(boto3_s, 3), "mb_per_s": round(mb / boto3_s, 2)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.copy_back",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb-per-file", type=float, default=16)
    parser.add_argument("--no-fixed-cost", action="store_true",
                        help="skip the 1-byte copy that measures DistCp's fixed cost")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "copy_back.json")
    args = parser.parse_args(argv)
    size = int(args.mb_per_file * 1_000_000)
    with tempfile.TemporaryDirectory(prefix="bench-copy-back-") as tmp:
        result = measure(args.files, size, Path(tmp), fixed_cost=not args.no_fixed_cost)
    print(f"copy_back: {args.files} x {args.mb_per_file:g} MB: DistCp "
          f"{result['distcp']['mb_per_s']} MB/s ({result['distcp']['seconds']} s, JVM start "
          f"included; 1-byte copy: {result['distcp']['fixed_cost_s']} s), boto3 download "
          f"{result['boto3_download']['mb_per_s']} MB/s "
          f"({result['boto3_download']['seconds']} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
