"""The hourly rollups run's cost as history grows: the scheduled activity rollups run (one new
day marked, as a compaction run marks it) on a lake of 30 days of history beside the same run on
a lake of 1 day of history, the same new day, in the same run and Spark session.

    python -m bench.rollups [--events-per-day 50000] [--history 30] [--rounds 2]

Input (generated once by Spark, cached under bench-out/): `history` + 1 days of curated events
written as the compaction writes them (curated/events/cluster=bench/dt=<d>/run=<id>/, zstd),
`events-per-day` each: CREATEs and CLOSEs of the day's own files, RENAMEs, UNLINKs, METADATA and
APPENDs of files created 1 to 29 days before (their owners come from those days' CREATEs: the
history the run must read). Two lakes name those partitions in their own JSON catalogs: the last
2 days (1 of history) and all of them (30 of history). Each lake first gets one untimed
scheduled run, as production had its previous hourly run: it reads every earlier day and
writes the owner state after the day before the new one (docs/glue.md), and warms the JVM up.
Each round then marks the new day in each lake and times glue_jobs.rollup_run.roll_up there,
the two lakes alternating; each timed run must start from that owner state and read no earlier
day. The figure is each lake's best round by CPU time (the driver's and the session JVM's,
from /proc: the machine is shared, wall seconds are noted beside). The previous design (every
day recomputed on each run, `--from_dt` of the first day) runs once on the 30-day lake for
scale.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import shutil
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import OUT_DIR

CLUSTER = "bench"
START_DAY = date(2024, 1, 1)
START_MS = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp() * 1000)
DAY_MS = 86_400_000
RUN_ID = "20240101T000000Z-00000000"  # the generated partitions' run folder
THRESHOLD = 1000  # mass deletes: the job's default


def _session(master: str = "local[2]") -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("bench-rollups")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def day_of(n: int) -> str:
    return (START_DAY + timedelta(days=n)).isoformat()


# --- input -------------------------------------------------------------------------------------

def input_lake(spark: Any, per_day: int, days: int) -> Path:
    # Keyed by the generator's own source, so editing the runs keeps the cached input.
    recipe = f"{inspect.getsource(generate)}{START_MS}{RUN_ID}"
    stamp = hashlib.sha256(recipe.encode()).hexdigest()[:8]
    lake = OUT_DIR / f"rollups-input-{per_day}-{days}-{stamp}"
    if not (lake / "curated").is_dir():
        tmp = lake.with_name(lake.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        generate(spark, tmp, per_day, days)
        tmp.rename(lake)
    return lake


def generate(spark: Any, root: Path, per_day: int, days: int) -> None:
    from pyspark.sql import functions as F

    from glue_jobs.curated_io import write_runs
    from glue_jobs.schema import EVENT_SCHEMA
    from glue_jobs.storage import LocalStore
    from hdfs_events.event import FIELDS

    i = F.col("id")
    day = (i / per_day).cast("long")
    j = i % per_day
    kind, group = j % 20, (j / 20).cast("long")
    typ = (F.when(kind < 7, "CREATE").when(kind < 12, "CLOSE").when(kind < 14, "RENAME")
           .when(kind < 17, "UNLINK").when(kind < 19, "METADATA").otherwise("APPEND"))
    # A group of 20 ops creates 7 files and closes 5 of them; its other ops touch files of the
    # same group created 1 to 29 days before (none exists before the first day: unknown owner).
    member = F.when(kind < 7, kind).when(kind < 12, kind - 7).otherwise(kind % 7)
    file_day = F.when(kind < 12, day).otherwise(day - 1 - group % 29)
    path = F.concat(F.lit("/data/team"), group % 50, F.lit("/d"), file_day, F.lit("/part-"),
                    group, F.lit("-"), member)
    ts = F.lit(START_MS) + day * DAY_MS + j * (DAY_MS // per_day)
    creates = typ == "CREATE"
    no_ts = typ.isin("METADATA", "APPEND")  # Hadoop gives these no timestamp
    null = F.lit(None)
    cols = {
        "cluster": F.lit(CLUSTER), "txid": i + 1, "index": F.lit(0), "type": typ, "path": path,
        "dst_path": F.when(typ == "RENAME", F.concat(path, F.lit(".done"))),
        "timestamp": F.when(~no_ts, ts), "inode_type": F.when(creates, "FILE"),
        "ctime": F.when(creates, ts), "replication": F.when(creates, 3),
        "owner": F.when(creates, F.concat(F.lit("user"), group % 17)),
        "group": F.when(creates, "hadoop"), "perms": F.when(creates, "0644"),
        "symlink_target": null, "overwrite": F.when(creates, F.lit(False)),
        "block_size": F.when(creates, 134217728), "erasure_coded": F.when(creates, F.lit(False)),
        "size": F.when(typ == "CLOSE", (i * 7919) % 10_000_000),
        "new_block": F.when(typ == "APPEND", F.lit(False)),
        "metadata_type": F.when(typ == "METADATA", "TIMES"),
        "mtime": F.when(typ == "METADATA", ts), "atime": F.when(typ == "METADATA", ts),
        "acls": null, "xattrs": null, "xattrs_removed": null, "gap_end_txid": null,
        "children_num": null,
    }
    # Fails loudly when the contract gains or reorders a field: the generator must follow it.
    if tuple(cols) != FIELDS:
        raise SystemExit(f"bench.rollups: the generator writes {tuple(cols)}, the contract "
                         f"(hdfs_events.event.FIELDS) is {FIELDS}: update generate()")
    rows = (spark.range(per_day * days)
            .select(*[c.cast(EVENT_SCHEMA[n].dataType).alias(n) for n, c in cols.items()],
                    F.date_format(F.date_add(F.lit(START_DAY), day.cast("int")),
                                  "yyyy-MM-dd").alias("dt"))
            .repartition("dt").sortWithinPartitions("txid"))
    write_runs(rows, LocalStore(root).root_uri, RUN_ID, "zstd")


# --- the runs ----------------------------------------------------------------------------------

def lake_with_history(name: str, data: Path, history: int, days: int) -> Any:
    """A lake whose JSON catalog names the last `history` + 1 generated days; returns its store."""
    from glue_jobs.catalog import JsonFileCatalog
    from glue_jobs.layout import LOCAL_CATALOG_KEY
    from glue_jobs.storage import LocalStore
    from hdfs_events.lake_layout import EVENTS_PREFIX, run_prefix

    root = OUT_DIR / "rollups-work" / name
    shutil.rmtree(root, ignore_errors=True)
    store, source = LocalStore(root), LocalStore(data)
    JsonFileCatalog(store, LOCAL_CATALOG_KEY).publish({
        (CLUSTER, day_of(n)): source.root_uri + run_prefix(EVENTS_PREFIX, CLUSTER, day_of(n), RUN_ID)
        for n in range(days - 1 - history, days)})
    return store


def cpu_seconds(spark: Any) -> float:
    """CPU time so far of this process and of the session's JVM (utime + stime of
    /proc/<pid>/stat): on a shared machine wall seconds follow the other tenants' load, CPU
    seconds much less."""
    jvm = spark.sparkContext._gateway.proc.pid  # the JVM pyspark launched for this session
    ticks = sum(int(x) for x in Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1]
                .split()[11:13])
    own = os.times()
    return ticks / os.sysconf("SC_CLK_TCK") + own.user + own.system


def hourly_run(spark: Any, store: Any, new_day: str, settings: Any = None) -> dict:
    """Seconds (wall and CPU) and report of one rollups run after a compaction run marked
    `new_day` (a run by hand, `settings` with a range, reads no mark: none is written)."""
    from glue_jobs import rollup_days
    from glue_jobs.catalog import JsonFileCatalog
    from glue_jobs.layout import LOCAL_CATALOG_KEY
    from glue_jobs.rollup_run import RollupSettings, roll_up
    from hdfs_events.lake_layout import new_run_id

    if settings is None:
        rollup_days.mark(store, new_run_id(), [(CLUSTER, new_day)])
    start, cpu = time.perf_counter(), cpu_seconds(spark)
    report = roll_up(spark, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY), store,
                     settings or RollupSettings(threshold=THRESHOLD))
    return {"seconds": round(time.perf_counter() - start, 2),
            "cpu_s": round(cpu_seconds(spark) - cpu, 2), "report": report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.rollups", description=__doc__.splitlines()[0])
    parser.add_argument("--events-per-day", type=int, default=50_000)
    parser.add_argument("--history", type=int, default=30, help="days before the new one")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs per lake (best kept)")
    parser.add_argument("--no-full", action="store_true",
                        help="skip the run that recomputes every day (the smoke)")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "rollups.json")
    args = parser.parse_args(argv)
    from glue_jobs.rollup_run import RollupSettings

    OUT_DIR.mkdir(exist_ok=True)
    days = args.history + 1
    new_day = day_of(days - 1)
    spark = _session()  # one JVM for the input and the runs
    started = time.perf_counter()
    data = input_lake(spark, args.events_per_day, days)
    generated_s = time.perf_counter() - started
    # `--history 1` (the smoke): one lake, both figures from it.
    lakes = {f"history_{n}": lake_with_history(f"history_{n}", data, n, days)
             for n in sorted({1, args.history})}
    state_day = day_of(days - 2)
    for name, store in lakes.items():  # the previous hourly run, untimed
        written = hourly_run(spark, store, new_day)["report"].owner_state_written
        if written != state_day:
            raise SystemExit(f"bench.rollups: {name}'s first run wrote the owner state after "
                             f"{written or 'no day'}; expected {state_day}")
    rounds: dict[str, list[dict]] = {name: [] for name in lakes}
    for _ in range(args.rounds):
        for name, store in lakes.items():
            run = hourly_run(spark, store, new_day)
            report = run.pop("report")
            got = (report.days, report.marks_cleared, report.owner_state, report.history_days)
            if got != ((new_day,), 1, state_day, 0):
                raise SystemExit(f"bench.rollups: {name} (days, marks cleared, owner state, "
                                 f"earlier days read) were {got}; expected "
                                 f"{((new_day,), 1, state_day, 0)}")
            rounds[name].append(run)
    full = {} if args.no_full else hourly_run(
        spark, lakes[f"history_{args.history}"], new_day,
        RollupSettings(from_dt=day_of(0), threshold=THRESHOLD))
    if full and len(full.pop("report").days) != days:
        raise SystemExit(f"bench.rollups: the full recompute did not roll up all {days} days")
    spark.stop()
    # Each lake's best round by CPU time, its wall seconds beside.
    results: dict[str, dict] = {name: {**min(r, key=lambda x: x["cpu_s"]), "rounds": r}
                                for name, r in rounds.items()}
    if full:
        results["full_recompute"] = {**full, "days": days}
    one, many = results["history_1"], results[f"history_{args.history}"]
    flat = one["cpu_s"] / many["cpu_s"]
    print(f"rollups hourly run, one new day of {args.events_per_day:,} events, best of "
          f"{args.rounds}: 1 day of history {one['cpu_s']:.1f} CPU s ({one['seconds']:.1f} s), "
          f"{args.history} days {many['cpu_s']:.1f} CPU s ({many['seconds']:.1f} s); 1-day / "
          f"{args.history}-day CPU: {flat:.2f}"
          + (f"; every day recomputed {full['cpu_s']:.1f} CPU s ({full['seconds']:.1f} s)"
             if full else ""))
    args.out.write_text(json.dumps({
        "events_per_day": args.events_per_day, "history": args.history, "rounds": args.rounds,
        "new_day": new_day, "generated_s": round(generated_s, 1), "results": results,
        "ratio_1_day_over_n_days": flat, "load_average": os.getloadavg()}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
