"""The namespace inventory job (Spark, local[2]) on the kit's 1M, 3M and 10M-file images beside
Hadoop's own `hdfs oiv -p Delimited` on the same image, same run; the line through them to 100M.

    python -m bench.inventory_scale [--sizes 1000000,3000000] [--out bench-out/inventory_scale.json]

For each size (tests/kit/hadoop/namespace_image.py: from 1M inodes up the image is the one a
NameNode saved with dfs.image.parallel.load on, INODE and INODE_DIR in 12 sub-sections each):
1. The NameNode's start on the image (parallel load on, no DataNode): HdfsCluster.started_s,
   from spawning its process to an active NameNode, and its peak RSS (VmHWM).
2. The image uploaded to a moto server in this process; the job's entry script
   (glue_jobs.namespace_inventory.main) run on it in a local[2] session with Spark's event log
   on, writing the table to a local directory (the job on Glue writes S3; moto's write path
   is not what is measured). Wall seconds around main(); executor CPU per stage from the event
   log (bench.spark_stages).
3. `hdfs oiv -p Delimited` on the same file, in a JVM of its own with the NameNode's heap:
   wall and CPU seconds (wait4's rusage: every JVM thread). Its rows are counted, not parsed:
   the tests prove the job's rows equal oiv's field for field
   (tests/integration/glue/test_namespace_inventory.py); here the counts must agree, or the
   run exits 1.
Then seconds = a + b * rows fitted over the sizes (least squares) for both, printed at 100M.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import OUT_DIR
from bench.spark_stages import print_stages, stage_breakdown
from tests.kit.hadoop.jars import LIB, java
from tests.kit.hadoop.namespace_image import NamespaceImage, namespace_image

BUCKET = "lake"
EXTRAPOLATE_TO = 100_000_000


def namenode_start(image: NamespaceImage, work: Path) -> dict[str, Any]:
    from tests.kit.hadoop.cluster import HdfsCluster

    with HdfsCluster.start(work / "namenode", image=image.name_dir, datanodes=0,
                           heap=image.heap, conf={"dfs.image.parallel.load": "true"}) as hdfs:
        started = hdfs.started_s
        rss = _vm_hwm_mb(hdfs.pid)
    shutil.rmtree(work / "namenode", ignore_errors=True)
    return {"start_s": round(started, 1), "peak_rss_mb": rss, "heap": image.heap}


def _vm_hwm_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM")


def oiv_delimited(image: NamespaceImage, out: Path) -> dict[str, Any]:
    """OfflineImageViewerPB -p Delimited over the image: wall and CPU seconds, rows printed."""
    started = time.perf_counter()
    with open(out.with_suffix(".err"), "w") as err:
        process = subprocess.Popen(
            [java(), f"-Xmx{image.heap}", "-Duser.timezone=UTC", "-cp", str(LIB / "*"),
             "org.apache.hadoop.hdfs.tools.offlineImageViewer.OfflineImageViewerPB",
             "-p", "Delimited", "-i", str(image.image), "-o", str(out)],
            stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"oiv -p Delimited exited {process.returncode}: "
                           f"{out.with_suffix('.err').read_text()[-2000:]}")
    with out.open("rb") as f:
        rows = sum(1 for _ in f) - 1  # its header line
    out.unlink()
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "rows": rows, "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def session(event_log: Path) -> Any:
    """The job's local session (glue_jobs.runtime.local_session's settings, the jobs' jar with
    the image decoder among them) with the event log on; the driver is every executor in local
    mode, given the heap a Glue G.1X worker's executor has (10g of its 16 GB) would be more than
    this machine spares: 4g."""
    from pyspark.sql import SparkSession

    from glue_jobs.runtime import job_jar

    event_log.mkdir(parents=True, exist_ok=True)
    spark = (SparkSession.builder.master("local[2]").appName("inventory_scale")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "4g")
             .config("spark.jars", job_jar())  # the job's decoder (glue_jobs/jvm)
             .config("spark.eventLog.enabled", "true")
             .config("spark.eventLog.dir", event_log.resolve().as_uri())
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_job(image: NamespaceImage, work: Path, s3: Any) -> dict[str, Any]:
    from glue_jobs import namespace_inventory

    key = f"fsimage/bench/{image.image.name}"
    s3.upload_file(str(image.image), BUCKET, key)
    target = work / "lake"
    event_log = work / "events"
    spark = session(event_log)
    out = io.StringIO()
    jvm = spark.sparkContext._gateway.proc.pid
    try:
        cpu0, started = tree_cpu_s(jvm), time.perf_counter()
        with contextlib.redirect_stdout(out):
            namespace_inventory.main(["--image", f"s3://{BUCKET}/{key}", "--cluster", "bench",
                                      "--target", target.resolve().as_uri()], spark=spark)
        wall = time.perf_counter() - started
        cpu = tree_cpu_s(jvm) - cpu0
    finally:
        spark.stop()
    s3.delete_object(Bucket=BUCKET, Key=key)
    report = json.loads(out.getvalue())
    stages = stage_breakdown(next(event_log.iterdir()))
    shutil.rmtree(work, ignore_errors=True)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 1),
            "executor_cpu_s": round(sum(s["cpu_s"] for s in stages), 1),
            "rows": report["rows"], "inode_parts": report["inode_parts"],
            "directory_parts": report["directory_parts"],
            "inode_decode_tasks": report["inode_decode_tasks"],
            "directory_levels": report["directory_levels"], "stages": stages}


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of the process `pid` and every process under it (the Spark JVM, its Python
    daemon and workers), their reaped children included: Linux /proc, clock ticks."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while listed
            continue
        me = int(stat.parent.name)
        parent[me] = int(fields[1])
        ticks[me] = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    total = 0
    for p in ticks:
        q = p
        while q in parent and q != pid:
            q = parent[q]
        if q == pid:
            total += ticks[p]
    return total / os.sysconf("SC_CLK_TCK")


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(a, b) of seconds = a + b * rows, least squares; one point: through the origin."""
    if len(points) == 1:
        return 0.0, points[0][1] / points[0][0]
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = (sum((x - mx) * (y - my) for x, y in points)
         / sum((x - mx) ** 2 for x, _ in points))
    return my - b * mx, b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inventory_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,3000000",
                        help="files per kit image, comma-separated")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "inventory_scale.json")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from tests.kit.local_chain import local_aws

    runs: list[dict[str, Any]] = []
    with local_aws(), tempfile.TemporaryDirectory(prefix="inventory-scale-") as tmp:
        import boto3

        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={
            "LocationConstraint": os.environ["AWS_REGION"]})
        for files in sizes:
            image = namespace_image(files)
            work = Path(tmp) / str(files)
            work.mkdir()
            load_before = os.getloadavg()[0]
            run = {"files": files, "image_bytes": image.image.stat().st_size,
                   "image_build": image.build,
                   "namenode": namenode_start(image, work),
                   "job": run_job(image, work / "job", s3),
                   "oiv": oiv_delimited(image, work / "oiv.tsv"),
                   "load_average": [load_before, os.getloadavg()[0]]}
            runs.append(run)
            print_run(run)
    same = all(r["job"]["rows"] == r["oiv"]["rows"] for r in runs)
    job_fit = fit([(r["job"]["rows"], r["job"]["wall_s"]) for r in runs])
    oiv_fit = fit([(r["oiv"]["rows"], r["oiv"]["wall_s"]) for r in runs])
    start_fit = fit([(r["job"]["rows"], r["namenode"]["start_s"]) for r in runs])
    at = {name: a + b * EXTRAPOLATE_TO
          for name, (a, b) in (("job", job_fit), ("oiv", oiv_fit), ("namenode", start_fit))}
    print(f"\nFitted seconds = a + b x rows over {len(runs)} sizes, at {EXTRAPOLATE_TO:,} rows: "
          f"job {at['job']:,.0f} s ({job_fit[0]:.1f} + {job_fit[1] * 1e6:.2f} s per 1M rows), "
          f"oiv {at['oiv']:,.0f} s ({oiv_fit[0]:.1f} + {oiv_fit[1] * 1e6:.2f}), NameNode start "
          f"{at['namenode']:,.0f} s ({start_fit[0]:.1f} + {start_fit[1] * 1e6:.2f})")
    print(f"job rows equal oiv's at every size: {'yes' if same else 'NO'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "sizes": sizes, "same_rows": same, "runs": runs,
        "extrapolated": {"rows": EXTRAPOLATE_TO, **{k: round(v) for k, v in at.items()}},
        "fits": {"job": job_fit, "oiv": oiv_fit, "namenode_start": start_fit}},
        indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if same else 1


def print_run(run: dict[str, Any]) -> None:
    job, oiv, nn = run["job"], run["oiv"], run["namenode"]
    rows = job["rows"]
    print(f"\nInventory of the kit's image of {run['files']:,} files ({rows:,} rows, "
          f"{run['image_bytes'] / 2**20:.0f} MiB, {job['inode_parts']} INODE parts, "
          f"{job['directory_parts']} INODE_DIR parts), load average {run['load_average'][0]:.1f}"
          f" -> {run['load_average'][1]:.1f} on {os.cpu_count()} cores")
    print(f"{'':34} {'rows/wall s':>12} {'wall s':>8} {'CPU s':>8}")
    print(f"{'image job, local[2] (main())':34} {rows / job['wall_s']:>12,.0f} "
          f"{job['wall_s']:>8.1f} {job['cpu_s']:>8.1f}")
    print(f"{'oiv -p Delimited (one JVM)':34} {oiv['rows'] / oiv['wall_s']:>12,.0f} "
          f"{oiv['wall_s']:>8.1f} {oiv['cpu_s']:>8.1f}")
    print(f"job / oiv: {oiv['wall_s'] / job['wall_s']:.2f}x by wall; NameNode start on the image "
          f"{nn['start_s']:.1f} s (heap {nn['heap']}, peak RSS {nn['peak_rss_mb']:,} MiB); oiv "
          f"peak RSS {oiv['peak_rss_mb']:,} MiB; CPU: the Spark JVM and its Python workers, oiv's "
          "JVM")
    print_stages("image job", job["stages"])


if __name__ == "__main__":
    raise SystemExit(main())
