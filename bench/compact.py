"""Compaction speed and memory: the Spark job on local[2] beside a single-process pyarrow
baseline doing the same dedup + sort + Parquet write, on the same input, in the same run.

    python -m bench.compact [--events 10000000] [--duplicates 0.05] [--out bench-out/compact.json]
                            [--no-local1] [--event-log DIR]

Input (generated once by Spark itself, cached under bench-out/): `events` distinct contract
events over ~28 hours, with the live agent's GAP and SNAPSHOT records at ~0.4%, plus a
`duplicates` fraction re-sent in other objects (timestamp-less ones an hour later, as after an
agent restart), as gzip JSON lines in the consumer's raw layout, about 2000 events per object.
Each contender runs in a fresh subprocess, one after the other:
- `spark`: glue_jobs.compaction_run.compact (gzip read, per-line validation, dedup, exactly-once
  merge, range-partitioned sorted zstd Parquet, catalog switch) on local[2];
- `spark_local1`: the same on local[1], for how the job scales with cores (Glue scales out);
- `spark_one_cpu`: local[1] again, the process pinned to one CPU (sched_setaffinity, inherited
  by the JVM, which then sizes itself for one CPU): its JIT compiler and GC share the task's
  core, as on a one-vCPU executor. Unpinned, local[1] runs them on the second CPU for free (at
  10M rows the JIT alone takes ~30 s of CPU in the timed window), so `spark_local1` is one task
  slot with more than one core behind it (`--no-local1` skips it: the smoke, where
  `spark_one_cpu` runs the same code on local[1]);
- `ceiling`: a CPU-bound Spark SQL query on local[1] then local[2], for how far JVM work
  scales with the second core on this machine at all (the scaling's ceiling here);
- `baseline`: pyarrow.json.read_json per object with the explicit schema, concat, sort by key,
  keep the first of each key, write_dataset partitioned by cluster/dt (zstd). pyarrow uses its
  own thread pool inside the one process; it validates no keys or enum values.
With `--event-log DIR`, each Spark contender writes Spark's event log under DIR/<contender>/
and the bench prints its stages' executor CPU seconds (from the log's task metrics): on a shared
machine, where wall seconds depend on the neighbours, CPU per stage is what compares two builds.
Both must produce exactly the distinct events. Speed: input rows (duplicates included) per wall
second. Memory: peak RSS of the Python process, and of Spark's JVM (VmHWM), of each child.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import inspect
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import OUT_DIR
from bench.spark_stages import print_stages, stage_breakdown

REPO = Path(__file__).resolve().parent.parent
START_MS = 1_700_000_000_000
STEP_MS = 10  # 10M events span ~28 hours: two dt partitions
PER_OBJECT = 2000


# name: (master, pinned to one CPU)
SPARK_CONTENDERS = {"spark": ("local[2]", False), "spark_local1": ("local[1]", False),
                    "spark_one_cpu": ("local[1]", True)}


def _spark(memory: str = "4g", master: str = "local[2]", conf: Mapping[str, str] | None = None):
    """The benches' session; `conf` adds settings (bench.compact_s3a: S3A's)."""
    from pyspark.sql import SparkSession

    from glue_jobs.runtime import job_conf

    builder = (SparkSession.builder.master(master).appName("bench-compact")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", memory)
               .config("spark.sql.shuffle.partitions", "16")
               .config("spark.sql.session.timeZone", "UTC"))
    jobs = job_conf()  # the JVM settings and jar a job runs with
    jars = ",".join(filter(None, [jobs["spark.jars"], (conf or {}).get("spark.jars")]))
    for key, value in (jobs | (conf or {}) | {"spark.jars": jars}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _peak_rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- input -------------------------------------------------------------------------------------

def input_lake(events: int, duplicates: float) -> Path:
    # Keyed by the generator's own source, so editing the contenders keeps the cached input.
    recipe = f"{inspect.getsource(generate)}{START_MS}{STEP_MS}{PER_OBJECT}"
    stamp = hashlib.sha256(recipe.encode()).hexdigest()[:8]
    lake = OUT_DIR / f"compact-input-{events}-d{duplicates}-{stamp}"
    if not (lake / "raw").is_dir():
        done = subprocess.run([sys.executable, "-m", "bench.compact", "--child", "generate",
                               "--events", str(events), "--duplicates", str(duplicates),
                               "--lake", str(lake)], cwd=REPO, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            last = [x for x in done.stderr.splitlines() if x.strip()][-1:] or ["no output"]
            raise SystemExit(f"bench.compact: generating the input failed: {last[0]}")
    return lake


def generate(lake: Path, events: int, duplicates: float) -> dict:
    from pyspark.sql import functions as F

    from hdfs_events.event import FIELDS

    t = time.perf_counter()
    spark = _spark()
    i = F.col("id")
    kind = i % 20
    ts = F.lit(START_MS) + i * STEP_MS
    # The live agent's records: every `block` events a GAP (purged edits) and, at the txid after
    # it, a SNAPSHOT listing of `listed` paths, as onprem_agent/live writes them; ~0.4% of rows.
    block = min(500_000, max(1_000, events // 4))
    listed = max(4, block // 250)
    r = i % block
    gap, snapshot = r == 0, (r >= 1) & (r <= listed)
    typ = (F.when(gap, "GAP").when(snapshot, "SNAPSHOT")
           .when(kind < 7, "CREATE").when(kind < 12, "CLOSE").when(kind < 14, "RENAME")
           .when(kind < 16, "UNLINK").when(kind < 19, "METADATA").otherwise("APPEND"))
    no_ts = ~gap & ~snapshot & (kind >= 16)  # METADATA and APPEND carry no timestamp in Hadoop
    # A snapshot's records share one txid (the one after the gap), indexed in listing order.
    txid = F.when(snapshot, i - r + 2).otherwise(i + 1)
    index = F.when(snapshot, r - 1).otherwise(F.lit(0)).cast("long")
    path = F.when(gap, F.lit("/")).otherwise(
        F.concat(F.lit("/data/team"), i % 50, F.lit("/d"), (i / 1000).cast("long") % 100,
                 F.lit("/part-"), i))
    listed_dir = snapshot & (i % 10 == 0)
    listed_file = snapshot & (i % 10 != 0)
    creates = typ == "CREATE"
    has_owner = creates | snapshot
    null = F.lit(None)
    cols = {
        "cluster": F.lit("bench"), "txid": txid, "index": index, "type": typ,
        "path": path,
        "dst_path": F.when(typ == "RENAME", F.concat(path, F.lit(".done"))),
        "timestamp": F.when(~no_ts, ts),
        "inode_type": F.when(creates | listed_file, "FILE").when(listed_dir, "DIRECTORY"),
        "ctime": F.when(creates, ts),
        "replication": F.when(creates | listed_file, F.lit(3).cast("long")),
        "owner": F.when(has_owner, F.concat(F.lit("user"), i % 17)),
        "group": F.when(has_owner, "hadoop"),
        "perms": F.when(has_owner, "0644"),
        "symlink_target": null.cast("string"),
        "overwrite": F.when(creates, F.lit(False)),
        "block_size": F.when(creates | listed_file, F.lit(134217728).cast("long")),
        "erasure_coded": F.when(creates | listed_file, F.lit(False)),
        "size": F.when((typ == "CLOSE") | listed_file, (i * 7919) % 10_000_000),
        "new_block": F.when(typ == "APPEND", F.lit(False)),
        "metadata_type": F.when(typ == "METADATA", "TIMES"),
        "mtime": F.when((typ == "METADATA") | snapshot, ts),
        "atime": F.when((typ == "METADATA") | snapshot, ts),
        "acls": null.cast("array<string>"),
        "xattrs": null.cast("array<struct<namespace:string,name:string,value:string>>"),
        "xattrs_removed": null.cast("boolean"),
        "gap_end_txid": F.when(gap, i + 2),
        # A listed directory's children (contract minor 1), as the listing start sends it.
        "children_num": F.when(listed_dir, (i % 200).cast("int")),
    }
    # Fails loudly when the contract gains or reorders a field: the generator must follow it.
    if tuple(cols) != FIELDS:
        raise SystemExit(f"bench.compact: the generator writes {tuple(cols)}, the contract "
                         f"(hdfs_events.event.FIELDS) is {FIELDS}: update generate()")
    base = spark.range(events).select(*[c.alias(n) for n, c in cols.items()], "id",
                                      F.lit(0).alias("resent"))
    every = max(1, round(1 / duplicates)) if duplicates > 0 else 0
    rows = base
    if every:
        rows = base.unionByName(base.where(F.col("id") % every == 0)
                                .withColumn("resent", F.lit(1)))
    # Partition time: the event's, else the sent time (a re-send is sent an hour later).
    part_ms = ts + F.col("resent") * 3_600_000
    part_ms = F.when(no_ts, part_ms).otherwise(ts)
    secs = (part_ms / 1000).cast("long")
    out = (rows.withColumn("dt", F.from_unixtime(secs, "yyyy-MM-dd"))
           .withColumn("hour", F.from_unixtime(secs, "HH"))
           .withColumn("obj", (F.col("id") / PER_OBJECT).cast("long") * 2 + F.col("resent"))
           .repartition(max(1, (events + events // max(every, 1)) // PER_OBJECT), "obj")
           .select("cluster", "dt", "hour",
                   F.to_json(F.struct(*[F.col(n) for n in FIELDS]),
                             {"ignoreNullFields": "false"}).alias("value")))
    tmp = lake.with_name(lake.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    out.write.partitionBy("cluster", "dt", "hour").option("compression", "gzip") \
        .text(str(tmp / "raw"))
    spark.stop()
    # Spark's part files -> the consumer's <name>.jsonl.gz; its .crc and _SUCCESS files go.
    objects = 0
    for f in glob.glob(str(tmp / "raw" / "**" / "*"), recursive=True):
        p = Path(f)
        if p.is_file() and p.name.endswith(".txt.gz"):
            p.rename(p.with_name(p.name.removesuffix(".txt.gz") + ".jsonl.gz"))
            objects += 1
        elif p.is_file():
            p.unlink()
    tmp.rename(lake)
    return {"objects": objects, "seconds": round(time.perf_counter() - t, 1)}


# --- contenders ----------------------------------------------------------------------------------

def run_spark(lake: Path, out: Path, master: str, one_cpu: bool,
              event_log: Path | None = None) -> dict:
    from glue_jobs.storage import LocalStore

    if one_cpu:  # before the JVM starts: it inherits the affinity
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    shutil.rmtree(out, ignore_errors=True)
    conf = {} if event_log is None else {"spark.eventLog.enabled": "true",
                                         "spark.eventLog.dir": event_log.resolve().as_uri()}
    return timed_compaction(_spark(master=master, conf=conf), LocalStore(lake), LocalStore(out))


def timed_compaction(spark: Any, source: Any, target: Any) -> dict:
    """One compact() from `source` into `target` (LakeStores), timed around the call only,
    with the Python and JVM peaks and the Parquet files written; stops the session."""
    from glue_jobs.catalog import JsonFileCatalog
    from glue_jobs.compaction_run import CompactionSettings, compact
    from glue_jobs.layout import LOCAL_CATALOG_KEY
    from hdfs_events.lake_layout import EVENTS_PREFIX

    jvm_pid = spark.sparkContext._gateway.proc.pid
    t = time.perf_counter()
    report = compact(spark, source, target, JsonFileCatalog(target, LOCAL_CATALOG_KEY),
                     CompactionSettings())
    seconds = time.perf_counter() - t
    jvm_peak = _peak_rss_mb(jvm_pid)
    spark.stop()
    files = sum(1 for o in target.list_objects(EVENTS_PREFIX) if o.key.endswith(".parquet"))
    return {"seconds": seconds, "rows_in": report.events_read, "rows_out": report.events_added,
            "files": files, "python_peak_mb": _peak_rss_mb(), "jvm_peak_mb": jvm_peak}


def run_baseline(lake: Path, out: Path) -> dict:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.json as pj

    from glue_jobs.schema import EVENT_SCHEMA
    from hdfs_events.lake_layout import parse_raw_key

    def arrow_type(t) -> pa.DataType:
        name = t.typeName()
        if name == "struct":
            return pa.struct([(f.name, arrow_type(f.dataType)) for f in t.fields])
        if name == "array":
            return pa.list_(arrow_type(t.elementType))
        return {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_()}[name]

    schema = pa.schema([(f.name, arrow_type(f.dataType)) for f in EVENT_SCHEMA.fields])
    shutil.rmtree(out, ignore_errors=True)
    files = sorted(glob.glob(str(lake / "raw" / "**" / "*.jsonl.gz"), recursive=True))
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    t = time.perf_counter()
    tables = []
    for n, f in enumerate(files):  # sorted keys: the object's number orders like its key
        key = parse_raw_key(str(Path(f).relative_to(lake)))
        table = pj.read_json(f, parse_options=opts)
        tables.append(table.append_column("raw_dt", pa.array([key.dt] * table.num_rows))
                      .append_column("object", pa.array([n] * table.num_rows, pa.int32())))
    table = pa.concat_tables(tables)
    del tables
    day = pc.strftime(pc.cast(table["timestamp"], pa.timestamp("ms", tz="UTC")), "%Y-%m-%d")
    table = table.append_column("dt", pc.coalesce(day, table["raw_dt"])).drop_columns("raw_dt")
    rows_in = table.num_rows
    table = table.sort_by([("cluster", "ascending"), ("txid", "ascending"),
                           ("index", "ascending"), ("dt", "ascending"), ("object", "ascending")])
    same = pc.and_(pc.and_(pc.equal(table["txid"][1:], table["txid"][:-1]),
                           pc.equal(table["index"][1:], table["index"][:-1])),
                   pc.equal(table["cluster"][1:], table["cluster"][:-1]))
    keep = pa.concat_arrays([pa.array([True]),
                             pc.invert(pc.fill_null(same, False)).combine_chunks()])
    table = table.filter(keep).drop_columns("object")
    ds.write_dataset(table, out, format="parquet",
                     partitioning=ds.partitioning(pa.schema([("cluster", pa.string()),
                                                             ("dt", pa.string())]),
                                                  flavor="hive"),
                     file_options=ds.ParquetFileFormat().make_write_options(compression="zstd"),
                     max_rows_per_file=2_000_000, max_rows_per_group=1_000_000,
                     preserve_order=True, existing_data_behavior="overwrite_or_ignore")
    seconds = time.perf_counter() - t
    parquet = len(glob.glob(str(out / "**" / "*.parquet"), recursive=True))
    return {"seconds": seconds, "rows_in": rows_in, "rows_out": table.num_rows, "files": parquet,
            "python_peak_mb": _peak_rss_mb(), "jvm_peak_mb": 0.0}


def run_ceiling(rows: int) -> dict:
    """A CPU-bound Spark SQL query (two hashes of each number's text) on local[1], then local[2],
    in one JVM, unpinned like `spark_local1`: how far plain JVM work with little JIT scales
    with the second core here, the ceiling for the compaction's unpinned scaling."""
    from pyspark.sql import functions as F

    def query(spark: Any, n: int) -> Any:  # a new frame each time: a collected one is reused
        text = F.col("id").cast("string")
        return spark.range(0, n, numPartitions=16).select(F.sum(F.xxhash64(text, F.sha1(text))))

    seconds = {}
    for master in ("local[1]", "local[2]"):
        spark = _spark(master=master)
        query(spark, rows // 10).collect()  # the JIT's warm-up
        t = time.perf_counter()
        query(spark, rows).collect()
        seconds[master] = time.perf_counter() - t
        spark.stop()
    return {"rows": rows, "seconds": seconds, "scaling": seconds["local[1]"] / seconds["local[2]"]}


# --- driver --------------------------------------------------------------------------------------

def child(name: str, *args: str) -> dict:
    """The JSON a `--child name` subprocess prints last."""
    proc = subprocess.run([sys.executable, "-m", "bench.compact", "--child", name, *args],
                          check=True, cwd=REPO, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def contender(name: str, lake: Path, *, event_log: Path | None = None) -> dict:
    out = OUT_DIR / f"compact-out-{name}"
    logged: list[str] = []
    if event_log is not None and name in SPARK_CONTENDERS:
        shutil.rmtree(event_log / name, ignore_errors=True)
        (event_log / name).mkdir(parents=True)  # Spark writes into it, never creates it
        logged = ["--event-log", str(event_log / name)]
    steal = _steal_seconds()
    result = child(name, "--lake", str(lake), "--to", str(out), *logged)
    result["steal_s"] = _steal_seconds() - steal
    if logged:
        result["stages"] = stage_breakdown(next((event_log / name).iterdir()))
    shutil.rmtree(out, ignore_errors=True)
    return result


def _steal_seconds() -> float:
    """CPU time the hypervisor ran someone else while this machine's vCPUs were ready to run
    (steal, the 8th number of /proc/stat's cpu line, in clock ticks): two runs of the same
    contender can differ by 20% here, and this tells a busy host from a slow run."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.compact", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="distinct events")
    parser.add_argument("--duplicates", type=float, default=0.05,
                        help="fraction of events sent twice (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "compact.json")
    parser.add_argument("--no-local1", action="store_true",
                        help="skip the spark_local1 contender (its figure too)")
    parser.add_argument("--event-log", type=Path, metavar="DIR",
                        help="write the Spark contenders' event logs under DIR and print their "
                             "executor CPU by stage")
    parser.add_argument("--child", choices=("generate", "baseline", "ceiling", *SPARK_CONTENDERS),
                        help=argparse.SUPPRESS)
    parser.add_argument("--lake", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "generate":
        print(json.dumps(generate(args.lake, args.events, args.duplicates)))
        return 0
    if args.child == "ceiling":
        # Long enough to time (~10 s on one core) unless the bench itself is a smoke.
        print(json.dumps(run_ceiling(30_000_000 if args.events >= 100_000 else 100_000)))
        return 0
    if args.child == "baseline":
        print(json.dumps(run_baseline(args.lake, args.to)))
        return 0
    if args.child:
        print(json.dumps(run_spark(args.lake, args.to, *SPARK_CONTENDERS[args.child],
                                   args.event_log)))
        return 0

    OUT_DIR.mkdir(exist_ok=True)
    lake = input_lake(args.events, args.duplicates)
    objects = len(glob.glob(str(lake / "raw" / "**" / "*.jsonl.gz"), recursive=True))
    names = [n for n in ("baseline", *SPARK_CONTENDERS) if not (args.no_local1 and
                                                               n == "spark_local1")]
    results = {name: contender(name, lake, event_log=args.event_log) for name in names}
    ceiling = child("ceiling", "--events", str(args.events))
    for name, r in results.items():
        if r["rows_out"] != args.events:
            raise SystemExit(f"bench.compact: {name} wrote {r['rows_out']} rows, "
                             f"expected the {args.events} distinct events")
        r["rows_per_s"] = r["rows_in"] / r["seconds"]
    ratio = results["spark"]["rows_per_s"] / results["baseline"]["rows_per_s"]
    scaling = (results["spark"]["rows_per_s"] / results["spark_local1"]["rows_per_s"]
               if "spark_local1" in results else None)
    one_cpu = results["spark"]["rows_per_s"] / results["spark_one_cpu"]["rows_per_s"]
    print(f"compaction of {results['spark']['rows_in']:,} input rows "
          f"({args.events:,} distinct, {objects} objects) on {os.cpu_count()} cores")
    print(f"{'contender':<13} {'seconds':>8} {'rows/s':>10} {'files':>6} "
          f"{'python MB':>10} {'JVM MB':>8} {'steal s':>8}")
    for name, r in results.items():
        print(f"{name:<13} {r['seconds']:>8.1f} {r['rows_per_s']:>10,.0f} {r['files']:>6} "
              f"{r['python_peak_mb']:>10,.0f} {r['jvm_peak_mb']:>8,.0f} {r['steal_s']:>8.1f}")
    unpinned = "not run" if scaling is None else f"{scaling:.2f}"
    print(f"spark local[2] / baseline rows/s: {ratio:.2f}; local[2] / local[1]: {unpinned} "
          f"(a CPU-bound Spark query: {ceiling['scaling']:.2f}); local[2] / local[1] on one "
          f"CPU: {one_cpu:.2f}")
    for name, r in results.items():
        if "stages" in r:
            print_stages(name, r["stages"])
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    args.out.write_text(json.dumps({
        "events": args.events, "duplicates": args.duplicates, "objects": objects,
        "results": results, "ratio_spark_over_baseline": ratio,
        "ratio_local2_over_local1": scaling, "ratio_local2_over_one_cpu": one_cpu,
        "ceiling": ceiling,
        "children_peak_rss_mb": children, "load_average": os.getloadavg()}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
