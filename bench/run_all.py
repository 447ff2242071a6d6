"""Every benchmark in one run, one table, one JSON file: `make bench`.

    python -m bench.run_all [--only translate,ship] [--size smoke|quick|full] [--work-dir DIR]

Sizes: `quick` (`make bench`) runs each bench below its own default so the whole run takes a
few minutes; `full` runs each at its own default (compaction: 10M events); `smoke` runs each at
a tiny size in seconds, for `make test` (tests/bench): it proves every bench still runs and
writes its JSON and that the cost model computes from them, and measures nothing worth reading.
A bench registers once, in BENCHES, with its figures and its three sizes.

Runs each bench in its own subprocess, one after the other (2 cores: running them side by side
would make each disturb the others), at sizes picked so the whole run takes a few minutes; the
table says the size of each. Each bench measures its baseline in the same run, so the ratios are
what to compare between runs and machines; absolute figures move with the machine's load (the
load average is recorded before and after).

A bench that fails is reported as failed with the last line of its error; the others still
run, and the exit status is 1. Writes bench-out/results.json: every figure, the sizes, the load
average, the time, the git commit, and each bench's own JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import REPO

SIZES = ("quick", "full", "smoke")


@dataclass(frozen=True, slots=True)
class Figure:
    """One row of the table: our figure beside the baseline measured in the same run."""

    figure: str
    unit: str
    ours: float | None
    baseline: float | None
    baseline_name: str
    size: str
    higher_is_better: bool = True
    note: str = ""


@dataclass(slots=True)
class BenchRun:
    name: str
    status: str = "not run"  # ok | failed
    seconds: float = 0.0
    error: str = ""
    result: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Bench:
    """One benchmark: `python -m <module> <args of the size>` writes bench-out/<output>, and
    `figures` turns that JSON into rows of the table."""

    name: str
    module: str
    output: str  # the JSON file it writes, under bench-out/
    figures: Callable[[dict[str, Any], str], list[Figure]]
    quick: tuple[str, ...]  # `make bench`: below the bench's default where that is slow
    quick_size: str  # what the table says about the quick run's size
    smoke: tuple[str, ...]  # `make test`: seconds, no figure worth reading
    full: tuple[str, ...] = ()  # the bench's own defaults
    full_size: str = "the bench's default size"
    timeout_s: int = 900
    # Benches whose bench-out/ files this one reads in the same run (lake: compact's input;
    # compact_s3a's smoke: compact.json); BENCHES lists them before it.
    reads: tuple[str, ...] = ()
    # What no other bench may use while this one runs, when benches run side by side (the
    # smoke in tests/bench runs two at a time): the kit's image cache is built, unlocked, by
    # the first run of a size, and a second builder of that size deletes the first's files.
    shares: tuple[str, ...] = ()
    # About how long its smoke takes alone on a quiet 2-core machine (seconds, 2026-11): the
    # smoke starts the longest first, so the two it runs at a time end together.
    smoke_s: int = 5

    def args(self, size: str) -> tuple[str, ...]:
        """`python -m` arguments of a run at this size."""
        return (self.module, *{"quick": self.quick, "full": self.full, "smoke": self.smoke}[size])

    def size(self, size: str) -> str:
        return {"quick": self.quick_size, "full": self.full_size, "smoke": "smoke"}[size]


# --- running ---------------------------------------------------------------------------------------

def last_error_line(stderr: str, stdout: str = "") -> str:
    """The last non-empty line of a failed child's output: usually the exception."""
    for text in (stderr, stdout):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1][:300]
    return "no output"


def run_bench(bench: Bench, work_dir: Path, size: str = "quick") -> BenchRun:
    """Runs one bench in work_dir (it writes work_dir/bench-out/<output>)."""
    run = BenchRun(bench.name)
    out_dir = work_dir / "bench-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / bench.output
    output.unlink(missing_ok=True)  # a stale file must not pass for this run's result
    start = time.perf_counter()
    args = bench.args(size)
    print(f"[bench {time.strftime('%H:%M:%S')}] {bench.name}: python -m {' '.join(args)}",
          flush=True)
    # A bench builds its Spark sessions as `make bench` does (compact_s3a adds the S3A jars
    # itself). Under pytest, tests/conftest.py sets PYSPARK_SUBMIT_ARGS for the test process's
    # own JVM: inherited, every smoke Spark JVM would also ship the 280 MB aws-java-sdk-bundle
    # to its local executor.
    # Read key by key with get(): the bench smoke calls this from threads while pytest sets and
    # pops PYTEST_CURRENT_TEST in os.environ, and items() raises KeyError on a key popped
    # between its listing and its read.
    env = {**{k: v for k in list(os.environ)
              if k != "PYSPARK_SUBMIT_ARGS" and (v := os.environ.get(k)) is not None},
           "BENCH_OUT": str(out_dir),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    try:
        done = subprocess.run([sys.executable, "-m", *args], cwd=work_dir, text=True, env=env,
                              capture_output=True, timeout=bench.timeout_s, check=False)
    except subprocess.TimeoutExpired:
        run.status, run.error = "failed", f"timed out after {bench.timeout_s} s"
        run.seconds = time.perf_counter() - start
        return run
    run.seconds = time.perf_counter() - start
    if done.stdout.strip():
        print(done.stdout.rstrip(), flush=True)
    if done.returncode != 0:
        run.status = "failed"
        run.error = f"exit {done.returncode}: {last_error_line(done.stderr, done.stdout)}"
    elif not output.exists():
        run.status, run.error = "failed", f"wrote no {output.name}"
    else:
        run.status = "ok"
    if output.exists():
        run.result = json.loads(output.read_text())
    return run


# --- figures from each bench's JSON ------------------------------------------------------------------

def _translate(r: dict[str, Any], size: str) -> list[Figure]:
    ours, base = r["results"]["ours"], r["results"]["baseline"]
    note = "" if r.get("same_events") else "EVENTS DIFFER"
    return [Figure("edit-log translation (read + translate)", "ops/CPU s",
                   ours["ops_per_cpu_s"], base["ops_per_cpu_s"], "iterparse+findtext", size,
                   note=note)]


def _audit_parse(r: dict[str, Any], size: str) -> list[Figure]:
    res, counts = r["results"], r["counts"]
    note = "" if r.get("same_records") else "RECORDS DIFFER; "
    return [Figure("audit log parsing (parse_line)", "lines/CPU s",
                   res["ours"]["lines_per_cpu_s"], res["baseline"]["lines_per_cpu_s"],
                   "split on tab and '=', no checks", size,
                   note=f"{note}{counts['bad']} bad, {counts['denied']} denied, "
                        f"{counts['proxy']} proxy; shipper's build_object "
                        f"{res['build_object']['lines_per_cpu_s']:,}/CPU s")]


def _attribution(r: dict[str, Any], size: str) -> list[Figure]:
    return [Figure("attribution join (events x audit lines)", "rows/s",
                   round(r["spark_rows_per_s"]), round(r["python_rows_per_s"]),
                   "one process, dicts, same rules", size,
                   note=f"{r['attributed']:,} of {r['events']:,} events attributed, "
                        f"{r['audit_lines']:,} audit lines; Spark local[2]")]


def _bridge(r: dict[str, Any], size: str) -> list[Figure]:
    res = r["results"]
    return [Figure("JVM bridge: JPype whole batch + poll", "events/s",
                   res["jpype_whole_batch_protobuf_with_poll"]["events_per_s"],
                   res["py4j_per_field"]["events_per_s"], "py4j per field", size,
                   note=f"JPype per field {res['jpype_per_field']['events_per_s']:,}/s")]


def _ship(r: dict[str, Any], size: str) -> list[Figure]:
    agent, base = r["agent"], r["baseline"]
    replay = agent["agent replay (2 s linger), gzip 3"]
    live = agent["agent live-like (linger 200 ms), gzip 3"]
    rows = [
        Figure("agent: pack+gzip+envelope (replay)", "events/CPU s",
               replay["events_per_cpu_s"], base["events_per_cpu_s"],
               "inotify-example JSON/msg", size,
               note=f"{replay['events_per_message']:.0f} ev/msg"),
        Figure("agent: pack+gzip+envelope (live 200 ms)", "events/CPU s",
               live["events_per_cpu_s"], base["events_per_cpu_s"],
               "inotify-example JSON/msg", size,
               note=f"{live['events_per_message']:.0f} ev/msg"),
        Figure("agent: translate + pipeline end to end", "events/CPU s",
               r["translate_and_replay_pipeline_events_per_cpu_s"], None, "", size,
               note=f"translate alone {r['translate_events_per_cpu_s']:,} ev/CPU s"),
        Figure("billed SQS send requests per 1,000 events (replay)", "requests",
               replay["billed_per_1000_events"], base["billed_per_1000_events"],
               "inotify-example", size, higher_is_better=False),
        Figure("billed SQS send requests per 1,000 events (live)", "requests",
               live["billed_per_1000_events"], base["billed_per_1000_events"],
               "inotify-example", size, higher_is_better=False),
    ]
    moto = r.get("moto_server")
    if moto:
        rows.append(Figure("agent to moto server over HTTP", "events/s",
                           moto["agent"]["events_per_s"], moto["baseline"]["events_per_s"],
                           "inotify-example", size,
                           note="moto-bound: ~25-30 batch calls/s"))
    return rows


def _ingest_throughput(r: dict[str, Any], size: str) -> list[Figure]:
    results = {x["config"]: x for x in r["results"]}
    base_name = next(name for name in results if name.startswith("baseline"))
    base = results[base_name]["events_per_s"]
    rows = []
    for name, x in results.items():
        if name == base_name:
            continue
        parts = x.get("parts_ms", {})
        slowest = max(parts, key=parts.get) if parts else ""
        rows.append(Figure(f"consumer per invocation: {name}", "events/s", x["events_per_s"],
                           base, "decode only", size,
                           note=f"{x['total_ms']:.0f} ms/inv; most: {slowest}"))
    return rows


def _index_apply(r: dict[str, Any], size: str) -> list[Figure]:
    now, was = r["current"], r.get("previous", {})
    name = "previous design (git)"
    return [
        Figure("index applying ranges, one cluster, per-request latency", "events/s",
               now["events_per_s_at_latency"], was.get("events_per_s_at_latency"), name, size,
               note=f"measured on moto {now['events_per_s']:.0f} vs "
                    f"{was.get('events_per_s', 0):.0f}"),
        Figure("index: round trips per 1,000 indexed events", "trips",
               now["round_trips_per_1000"], was.get("round_trips_per_1000"), name, size,
               higher_is_better=False),
        Figure("index: write units per 1,000 indexed events", "WCU",
               now["write_units_per_1000"], was.get("write_units_per_1000"), name, size,
               higher_is_better=False),
    ]


def _index_walks(r: dict[str, Any], size: str) -> list[Figure]:
    now, was = r["current"], r.get("previous", {})
    name = f"walk of 16 directories a step ({r['baseline_ref']})"
    return [
        Figure("index: round trips per 1,000 events, trees over the listing budget renamed",
               "trips", now["round_trips_per_1000"], was.get("round_trips_per_1000"), name,
               size, higher_is_better=False,
               note=f"latency rounds at 16 connections {now['latency_rounds_per_1000']:.1f} vs "
                    f"{was.get('latency_rounds_per_1000', 0):.1f}; {now['differences']} "
                    "entries differ from the in-order replay"),
    ]


def _index_backlog(r: dict[str, Any], size: str) -> list[Figure]:
    return [
        Figure("index catching up on a backlog, in-memory stores", "events/CPU s",
               r["events_per_cpu_s"], r["replay_events_per_cpu_s"],
               "in-order replay into dicts", size,
               note=f"{r['events']:,} events, {r['live_paths']:,} live paths; equal to the "
                    f"replay"),
        Figure("index backlog: writes per 1,000 events", "puts", r["puts_per_1000"], 1000,
               "one write per event", size, higher_is_better=False),
    ]


def _hot_directory(r: dict[str, Any], size: str) -> list[Figure]:
    now, was = r["current"], r["baseline"]
    name = "one partition per directory (sharding off)"
    return [
        Figure(f"hot directory: throttled writes, {r['creates']:,} creates at {r['rate']:,}/s",
               "writes", now["throttled_writes"], was["throttled_writes"], name, size,
               higher_is_better=False,
               note=f"{r['partition_wcu_per_s']:,} WCU/s per partition key, simulated clock"),
        Figure("hot directory: hottest partition key", "WCU/s",
               now["hottest_partition_wcu_per_s"], was["hottest_partition_wcu_per_s"], name,
               size, higher_is_better=False),
        Figure("hot directory: Queries of one `index ls`", "calls", now["ls_queries"],
               was["ls_queries"], name, size, higher_is_better=False),
    ]


def _compact(r: dict[str, Any], size: str) -> list[Figure]:
    res = r["results"]
    rows = [Figure("compaction (Spark local[2])", "rows/s", res["spark"]["rows_per_s"],
                   res["baseline"]["rows_per_s"], "pyarrow 1 process", size,
                   note="timed around compact(): session start excluded, JVM warm-up in"),
            Figure("compaction scaling with cores", "rows/s", res["spark"]["rows_per_s"],
                   res["spark_one_cpu"]["rows_per_s"], "local[1] on 1 CPU", size,
                   note="goal >= 1.7x; 2 CPUs against 1, the JVM pinned: its JIT and GC share "
                        "its one core")]
    if "spark_local1" not in res:  # the smoke skips it (--no-local1)
        return rows
    return [*rows, Figure("compaction scaling, JIT free", "rows/s", res["spark"]["rows_per_s"],
                          res["spark_local1"]["rows_per_s"], "local[1] on 2 CPUs", size,
                          note=f"local[1]'s JIT and GC run on the idle CPU; a CPU-bound Spark "
                               f"query {r['ceiling']['scaling']:.2f}x here")]


def _compact_s3a(r: dict[str, Any], size: str) -> list[Figure]:
    res = r["results"]
    per_object = {verb: n / max(1, r["objects"]) for verb, n in res["s3a"]["s3_requests"].items()}
    return [Figure("compaction through S3A on moto", "rows/s", res["s3a"]["rows_per_s"],
                   res["file"]["rows_per_s"], "same job on file://", size,
                   note="local[2], session start excluded; S3 requests per raw object "
                        + ", ".join(f"{n:.1f} {verb}" for verb, n in per_object.items()))]


def _rollups(r: dict[str, Any], size: str) -> list[Figure]:
    res, n = r["results"], r["history"]
    ours, one, full = res[f"history_{n}"], res["history_1"], res.get("full_recompute")
    flat = [Figure(f"rollups hourly run, {n} days of history", "CPU s", ours["cpu_s"],
                   one["cpu_s"], "1 day of history", size, higher_is_better=False,
                   note=f"goal ~1.00x (flat); one new day of {r['events_per_day']:,} events, "
                        f"best of {r['rounds']}; wall {ours['seconds']:.1f} vs "
                        f"{one['seconds']:.1f} s")]
    if full is None:  # the smoke skips it
        return flat
    return [*flat, Figure(f"rollups hourly run vs every day recomputed, {n} days", "CPU s",
                          ours["cpu_s"], full["cpu_s"], "every day (the run before #29)", size,
                          higher_is_better=False, note=f"{full['days']} days recomputed, one "
                          f"run, wall {full['seconds']:.1f} s")]


def _lake(r: dict[str, Any], size: str) -> list[Figure]:
    return [Figure("raw lake bytes/event (gzip JSON lines)", "bytes",
                   r["raw_bytes_per_event"], r["raw_bytes_per_single_event_object"],
                   "one event per object", size, higher_is_better=False,
                   note=f"{r['events_per_raw_object']:.0f} ev/object; curated Parquet "
                        f"{r['parquet_bytes_per_event']:.1f} B/event")]


def _freshness(r: dict[str, Any], size: str) -> list[Figure]:
    rows = []
    for p in r["phases"]:
        if p.get("purpose", "freshness") != "freshness":
            continue
        rate = int(p["rate_events_per_s"])
        lost = f"; LOST {p['lost']}" if p["lost"] else ""
        for q in ("p50", "p99"):
            rows.append(Figure(f"freshness edit->lake {q} at {rate} ev/s", "ms",
                               p["edit_to_lake_ms"][q], p["sent_to_lake_ms"][q],
                               "zero-linger floor", size, higher_is_better=False,
                               note=f"edit->sent {p['edit_to_sent_ms'][q]:.0f} ms; "
                                    f"{p['events_per_message']:.0f} ev/msg{lost}"))
    return rows


def _copy_back(r: dict[str, Any], size: str) -> list[Figure]:
    distcp = r["distcp"]
    fixed = "" if distcp["fixed_cost_s"] is None else (  # the smoke skips it
        f" ({distcp['fixed_cost_s']:.1f} s for 1 byte); once running "
        f"{distcp['running_mb_per_s']} MB/s")
    return [Figure("return copy: DistCp s3a:// -> HDFS", "MB/s", distcp["mb_per_s"],
                   r["boto3_download"]["mb_per_s"], "boto3 download", size,
                   note=f"{distcp['seconds']:.1f} s with JVM start + job set-up{fixed}")]


def _live(r: dict[str, Any], size: str) -> list[Figure]:
    nn = r["namenode"]
    return [Figure("agent live path from a real NameNode", "events/s", r["agent"]["events_per_s"],
                   r["java"]["events_per_s"], "Hadoop's Java inotify loop", size,
                   note=f"goal >= {r['goal_ratio']}x; NameNode up in {nn['start_s']:.1f} s, "
                        f"peak RSS {nn['vm_hwm_kb'] / 1024:.0f} MiB")]


def _chain_speed(r: dict[str, Any], size: str) -> list[Figure]:
    nn, lake, index, v = r["namenode"], r["edit_to_lake_ms"], r["edit_to_index_ms"], r["verify"]
    cpu = r["cpu_s_during_the_drive"]
    busy = sum(s for k, s in cpu.items() if k not in ("wall_s", "cores")) / (
        cpu["wall_s"] * cpu["cores"])
    checks = (f"lost {r['lost']}, verify {v['differ']} differ" if r["caught_up"] else
              f"NOT CAUGHT UP: {r['not_indexed']:,} events not indexed at the end") + (
        f"; {r['threads']} client threads, {r['consumers']} consumers, DynamoDB "
        f"{r['latency_ms']:g} ms a call (shared double); the run took {busy:.0%} of "
        f"{cpu['cores']} cores during the drive")
    return [
        Figure("whole chain at the NameNode's speed (to the index)", "events/s",
               r["index_events_per_s"], nn["events_per_s"], "NameNode's journal rate", size,
               note=f"goal >= {r['goal']['ratio']}x; to the lake {r['lake_events_per_s']:,} "
                    f"events/s; {checks}"),
        Figure("freshness NameNode commit -> index entry p99 (at full speed)", "ms",
               index["p99"], None, f"goal <= {r['goal']['p99_ms']:,} ms", size,
               higher_is_better=False,
               note=f"p50 {index['p50']:.0f} ms; -> lake object p50 {lake['p50']:.0f} ms, "
                    f"p99 {lake['p99']:.0f} ms"),
    ]


def _sync(r: dict[str, Any], size: str) -> list[Figure]:
    first, steady, append = r["initial_copy"], r["steady"], r["append"]
    sync, distcp = first["sync"], first["distcp"]
    jvm = "JVM start in both"
    running = "" if sync.get("running_mb_per_s") is None else (
        f"; once running {sync['running_mb_per_s']} vs {distcp['running_mb_per_s']} MB/s "
        f"(fixed cost {sync['fixed_cost_s']:.1f} vs {distcp['fixed_cost_s']:.1f} s)")
    return [
        Figure("sync initial copy HDFS -> S3", "MB/s", sync["mb_per_s"], distcp["mb_per_s"],
               "distcp -update -direct", size, note=f"{r['files']} files; {jvm}{running}"),
        Figure("sync initial copy HDFS -> S3", "objects/s", sync["objects_per_s"],
               distcp["objects_per_s"], "distcp -update -direct", size, note=jvm),
        *(Figure(f"sync lag edit -> object {q} at {steady['rate_per_s']:g} files/s", "ms",
                 steady["lag_ms"][q], steady["distcp_update_seconds"] * 1000,
                 "one distcp -update run", size, higher_is_better=False,
                 note=f"window_ms {r['window_ms']}; scheduled DistCp adds half its period")
          for q in ("p50", "p99")),
        Figure("sync S3 requests per replicated file", "requests",
               steady["sync_requests_per_file"]["total"],
               steady["distcp_update_requests_per_file"]["total"], "distcp -update", size,
               higher_is_better=False, note="counted at the server, steady workload"),
        Figure(f"sync append {append['appended_bytes'] // 1024} KiB to "
               f"{append['base_bytes'] / 2**20:.1f} MiB: bytes sent", "bytes",
               append["sync"]["bytes_sent"], append["part_copy"]["bytes_sent"],
               "UploadPartCopy + part by hand", size, higher_is_better=False,
               note=f"{'new bytes only' if append['sync']['as_append'] else 're-copy'}, "
                    f"{append['sync']['requests']} requests; by hand "
                    f"{append['part_copy']['requests']}"),
        *(Figure(f"sync first copy of {label}, once running",
                 "MB/s" if row["bytes"] >= row["files"] * 1e6 else "objects/s",
                 *(row[t]["running_mb_per_s" if row["bytes"] >= row["files"] * 1e6
                          else "running_objects_per_s"] for t in ("sync", "distcp")),
                 "distcp -update -direct", size,
                 note=f"CPU s/GB {row['sync']['cpu_s_per_gb']} vs "
                      f"{row['distcp']['cpu_s_per_gb']}; NameNode RPCs "
                      f"{row['sync']['hdfs']['namenode_rpcs']} vs "
                      f"{row['distcp']['hdfs']['namenode_rpcs']}")
          for label, row in r.get("rows", {}).items()),
        *(Figure(f"sync lag p99 at {d['rate_per_s']:g} files/s while "
                 f"{d['bytes'] / 1e6:g} MB copies", "ms", d["lag_ms"]["p99"], 2000,
                 "the issue's goal", size, higher_is_better=False,
                 note=f"{len(d['copy_seconds'])} large copies one after another, "
                      f"{', '.join(map(str, d['copy_seconds']))} s; {d['files']} files")
          for d in [r.get("lag_during_large_copy")] if d),
    ]


def _inventory_scale(r: dict[str, Any], size: str) -> list[Figure]:
    rows = []
    for run in r["runs"]:
        job, oiv = run["job"], run["oiv"]
        note = "" if job["rows"] == oiv["rows"] else "ROW COUNTS DIFFER; "
        rows.append(Figure(f"fsimage -> inventory table, Spark local[2], {job['rows']:,} rows",
                           "rows/s", round(job["rows"] / job["wall_s"]),
                           round(oiv["rows"] / oiv["wall_s"]), "oiv -p Delimited", size,
                           note=f"{note}CPU {job['cpu_s']:.0f} s vs oiv {oiv['cpu_s']:.0f} s; "
                                f"NameNode start {run['namenode']['start_s']:.0f} s"))
    x = r["extrapolated"]
    rows.append(Figure(f"fsimage -> inventory at {x['rows']:,} rows (fitted line)", "s",
                       x["job"], x["oiv"], "oiv -p Delimited, fitted", size,
                       higher_is_better=False, note=f"NameNode start {x['namenode']:,} s"))
    return rows


def _first_start(r: dict[str, Any], size: str) -> list[Figure]:
    base = r["runs"][0]
    rows = []
    for run in r["runs"]:
        for step in ("first_start", "verify"):
            ours, was = run[step], base[step]
            if ours is None or was is None:  # the image start alone at this size
                continue
            speed = (f"{ours['seconds']:.0f} s, {ours['events_per_s']:,} events/s"
                     if step == "first_start" else
                     f"{ours['seconds']:.0f} s, {ours['differ']:,} differ; " + (
                         f"index {run['index']['records_per_s']:,} records/s via moto"
                         if run["index"] else "index empty: every entry MISSING"))
            rows.append(Figure(f"{step.replace('_', ' ')} peak RSS, {run['files']:,} files",
                               "MiB", ours["peak_rss_kb"] / 1024, was["peak_rss_kb"] / 1024,
                               f"{base['files']:,} files", size, higher_is_better=False,
                               note=f"goal <= {r['goal_ratio']}x the baseline (better x >= "
                                    f"{1 / r['goal_ratio']:.2f}); {speed}"))
        image, listed = run["image_start"], run["first_start"]
        written = image["indexed"]
        writes = (f"index writes at {image['writes_latency_ms']:g} ms a call (latency double"
                  + (", 1,000 writes/s a partition key" if image["key_limit"] else "")
                  + f"), not stored, {written['unprocessed_retries']:,} resends of unprocessed "
                  "items" if image["writes_latency_ms"] is not None else
                  "index equal to the listing start's: "
                  + ("yes" if image["compared"] and not image["compared"]["differ"] else "n/a"))
        rows.append(Figure(
            f"fsimage start, {run['files']:,} files", "s", image["seconds"],
            listed["seconds"] if listed else None,
            "the listing start, same namespace (until SQS acknowledged it, not applied)", size,
            higher_is_better=False,
            note=f"goal <= 300 s at 10M inodes; the inventory job on local[2] "
                 f"{image['job_seconds']:.0f} s, {written['entries']:,} entries in "
                 f"{written['seconds']:.0f} s; {image['listing_rpcs']} listing RPCs; {writes}"))
        rows.append(Figure(
            f"fsimage start peak RSS, {run['files']:,} files", "MiB",
            image["peak_rss_kb"] / 1024, listed["peak_rss_kb"] / 1024 if listed else None,
            "the listing start, same namespace", size, higher_is_better=False,
            note="goal <= 1,024 MiB at 10M inodes (the agent's process: JVM and Python)"))
        applied = image["apply"]
        rows.append(Figure(
            f"SNAPSHOT apply at {applied['latency_ms']:g} ms per DynamoDB call, "
            f"{run['files']:,} files", "records/s", applied["records_per_s"], None,
            "goal 50,000 (issue #32)", size,
            note=f"{applied['write_tasks']} write tasks x {applied['threads_per_task']} calls in "
                 "flight, on local[2]" + (", the image start's own writes" if
                                          applied.get("in_the_image_start") else "")
                 + "; the consumer's one in-order applier: bench.index_apply"))
        if run.get("gap_repair"):
            rows.extend(_gap_repair(run["gap_repair"], run["files"], listed, run["index"],
                                    size))
    return rows


def _gap_repair(g: dict[str, Any], files: int, listed: dict[str, Any] | None,
                applied: dict[str, Any] | None, size: str) -> list[Figure]:
    job, checked = g["indexed"], g["verify"]
    index = (f"verify {checked['differ']:,} differ" if checked else
             "index writes through the latency double, not verified"
             if g["writes_latency_ms"] is not None else "not verified (above --index-max-files)")
    return [
        Figure(f"gap repair from the fsimage, {files:,} files", "s", g["seconds"],
               listed["seconds"] if listed else None,
               "the listing start, same namespace (a listing repair lists it; until SQS "
               "acknowledged it, not applied)", size, higher_is_better=False,
               note=(f"the consumer applied that listing in {applied['seconds']:.0f} s more; "
                     if applied else "")
                    + f"the agent's start to checkpoint T (its index written) after "
                    f"{g['changes']} changes and "
                    f"their edits purged; the inventory job on local[2] "
                    f"{g['job_seconds']:.0f} s, {job['entries']:,} entries written and "
                    f"{job['removed']:,} removed ({g['paths_away']:,} paths away) in "
                    f"{job['seconds']:.0f} s; {g['listing_rpcs']} listing RPCs; {index}"),
        Figure(f"gap repair peak RSS, {files:,} files", "MiB", g["peak_rss_kb"] / 1024,
               listed["peak_rss_kb"] / 1024 if listed else None,
               "the listing start, same namespace", size, higher_is_better=False,
               note="the agent's process (JVM and Python)"),
    ]


KIT_IMAGES = "the kit's namespace images (tests/kit/hadoop/namespace_image.py)"

# Every bench, in the order they run (lake reads compact's input). Register a new bench here
# once: `make bench`, `--size full` and the smoke in `make test` (tests/bench) all pick it up.
BENCHES: tuple[Bench, ...] = (
    Bench("translate", "bench.translate", "translate.json", _translate,
          quick=("--ops", "200000"), quick_size="200k-op edit log (default 1M)",
          smoke=("--ops", "3000")),
    Bench("audit_parse", "bench.audit_parse", "audit_parse.json", _audit_parse,
          quick=("--lines", "100000"), quick_size="100k generated audit lines, best of 3 "
          "(default 300k)", smoke=("--lines", "2000", "--rounds", "1")),
    Bench("attribution", "bench.attribution", "attribution.json", _attribution,
          quick=("--events", "50000"), quick_size="50k events, 50 users, 20k paths, best of 2 "
          "(default 200k)", smoke=("--events", "400", "--paths", "100", "--rounds", "1"),
          smoke_s=40),
    Bench("bridge", "bench.bridge", "bridge.json", _bridge,
          quick=("--events", "20000", "--py4j-events", "300"),
          quick_size="20k events, py4j 300 CLOSE (default 50k / 500)",
          smoke=("--events", "500", "--py4j-events", "20")),
    Bench("ship", "bench.ship", "ship.json", _ship,
          quick=("--ops", "100000", "--moto-events", "5000", "--moto-baseline-events", "1000"),
          quick_size="100k-op log; moto 5k / 1k events (default 300k; 20k / 2k)",
          smoke=("--ops", "3000", "--moto-events", "200", "--moto-baseline-events", "50")),
    # The index through moto's DynamoDB takes ~25 ms a call: 100-event messages keep it short.
    Bench("ingest_throughput", "bench.ingest_throughput", "ingest_throughput.json", _ingest_throughput,
          quick=("--invocations", "1", "--events-per-message", "100"),
          quick_size="1 invocation x 9 msgs x 100 events + manifest (default 3 x 9 x 1000)",
          smoke=("--invocations", "1", "--events-per-message", "5")),
    Bench("index_apply", "bench.index_apply", "index_apply.json", _index_apply,
          quick=("--ops", "8000"),
          quick_size="8k-op edit log, 5 ms/request, previous design from git (default 60k)",
          smoke=("--ops", "300", "--latency-ms", "1")),
    Bench("index_walks", "bench.index_apply", "index_walks.json", _index_walks,
          quick=("--workload", "big-renames"),
          quick_size="a 23,170-entry tree renamed 3 times, 5 ms/request, previous walk from git",
          smoke=("--workload", "big-renames", "--groups", "2", "--dirs", "5", "--files", "2",
                 "--latency-ms", "1"),
          full=("--workload", "big-renames"), full_size="a 23,170-entry tree renamed 3 times",
          timeout_s=3600),
    # The index's own logic, no AWS: the scale claim tests/unit/ingest/test_index_backlog.py
    # makes at 20k events.
    Bench("index_backlog", "bench.index_backlog", "index_backlog.json", _index_backlog,
          quick=("--events", "200000"), quick_size="200k events (default 1M)",
          smoke=("--events", "3000"), full_size="1M events"),
    # The per-partition write limit modelled on a simulated clock; moto in-process.
    Bench("hot_directory", "bench.hot_directory", "hot_directory.json", _hot_directory,
          quick=("--creates", "20000"), quick_size="20k creates into one directory at 10k/s "
          "(default 100k)", smoke=("--creates", "1200"),
          full_size="100k creates into one directory at 10k/s", smoke_s=15),
    Bench("compact", "bench.compact", "compact.json", _compact,
          quick=("--events", "1000000"), quick_size="1M events + 5% duplicates (default 10M)",
          smoke=("--events", "3000", "--no-local1"), full_size="10M events + 5% duplicates",
          timeout_s=3600, smoke_s=65),
    Bench("compact_s3a", "bench.compact_s3a", "compact_s3a.json", _compact_s3a,
          quick=("--events", "200000"), quick_size="200k events + 5% duplicates",
          smoke=("--events", "3000", "--file-result", "bench-out/compact.json"),
          full=("--events", "1000000"), full_size="1M events + 5% duplicates", timeout_s=3600,
          reads=("compact",), smoke_s=25),
    Bench("rollups", "bench.rollups", "rollups.json", _rollups,
          quick=("--events-per-day", "20000"),
          quick_size="1 new day of 20k events, 1 vs 30 days of history (default 50k a day)",
          smoke=("--events-per-day", "200", "--history", "1", "--rounds", "1", "--no-full"),
          full_size="1 new day of 50k events, 1 vs 30 days of history", timeout_s=3600, smoke_s=55),
    Bench("lake", "bench.cost_model", "lake.json", _lake,
          quick=("--measure-lake",), quick_size="compact's input lake; Parquet by pyarrow",
          smoke=("--measure-lake",), full=("--measure-lake",),
          full_size="compact's input lake; Parquet by pyarrow", reads=("compact",)),
    Bench("freshness", "bench.freshness", "freshness.json", _freshness,
          quick=("--rates", "200,1000", "--seconds", "10", "--index-seconds", "6",
                 "--summary-seconds", "3"),
          quick_size="10 s per load, 2 message groups, none indexed, 1 poller",
          smoke=("--rates", "100", "--seconds", "1", "--index-seconds", "1",
                 "--summary-seconds", "1"), smoke_s=55),
    Bench("live", "bench.live", "live.json", _live,
          quick=("--ops", "20000"),
          quick_size="real NameNode, ~8k events, best of 3, a second client loading it",
          smoke=("--ops", "500", "--rounds", "1"), smoke_s=15),
    # A real NameNode at full speed for --seconds, the agent, moto servers for SQS and S3, a
    # consumer process per message group (up to 8) and the DynamoDB double they share.
    Bench("chain_speed", "bench.chain_speed", "chain_speed.json", _chain_speed,
          quick=("--seconds", "60"), quick_size="60 s, 8 client threads (default 600 s)",
          smoke=("--seconds", "3", "--threads", "2"), full_size="600 s, 8 client threads",
          timeout_s=3600, smoke_s=40),
    # The image job at scale: kit images (built once per size, cached), one NameNode start, one
    # Spark session and one oiv JVM per size.
    Bench("inventory_scale", "bench.inventory_scale", "inventory_scale.json", _inventory_scale,
          quick=("--sizes", "1000000"), quick_size="kit image of 1M files",
          smoke=("--sizes", "2000"), full=("--sizes", "1000000,3000000,10000000"),
          full_size="kit images of 1M, 3M, 10M files", timeout_s=7200, shares=(KIT_IMAGES,),
          smoke_s=30),
    # Image build (first run of a size; cached in .hadoop/namespaces) + one NameNode per size.
    Bench("first_start", "bench.first_start", "first_start.json", _first_start,
          quick=("--sizes", "100000,300000"), quick_size="real NameNode of 100k, 300k files",
          smoke=("--sizes", "2000", "--writes-double-from", "2000", "--key-limit"),
          full=("--sizes", "100000,300000,1000000,10000000", "--key-limit"),
          full_size="real NameNode of 100k, 300k, 1M files; 10M: the image start alone, its "
                    "index writes through the latency double, 1,000 writes/s a partition key",
          timeout_s=4 * 3600,
          shares=(KIT_IMAGES,), smoke_s=115),
    Bench("copy_back", "bench.copy_back", "copy_back.json", _copy_back,
          quick=("--files", "4", "--mb-per-file", "8"),
          quick_size="4 x 8 MB objects, moto S3 -> HDFS (default 8 x 16 MB)",
          smoke=("--files", "2", "--mb-per-file", "0.25", "--no-fixed-cost"), smoke_s=15),
    Bench("sync", "bench.sync", "sync.json", _sync,
          quick=("--files", "6", "--mb-per-file", "8", "--lag-seconds", "15"),
          quick_size="6 x 8 MB, 15 s at 4 files/s (default 8 x 8 MB, 20 s)",
          smoke=("--files", "2", "--mb-per-file", "0.25", "--lag-seconds", "2",
                 "--append-base-mb", "5.25", "--no-fixed-cost"), smoke_s=55),
)


def cost_figures(out_dir: Path) -> tuple[list[Figure], str]:
    """The cost model's totals from this run's JSON (every input bench must have passed)."""
    from bench import cost_model

    rows = []
    for mode in ("all", "summary"):
        try:
            o, b, _ = cost_model.designs(out_dir, mode)
        except (SystemExit, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            return rows, f"{type(exc).__name__}: {exc}"
        rows.append(Figure(f"AWS bill per billion events, log {mode}", "USD",
                           cost_model.total(cost_model.bill(o)),
                           cost_model.total(cost_model.bill(b)), "inotify-example",
                           "20% indexed; us-east-1 prices", higher_is_better=False,
                           note="python -m bench.cost_model for the items"))
    return rows, ""


def figures_of(run: BenchRun, bench: Bench, size: str = "quick") -> tuple[list[Figure], str]:
    """The bench's rows, or none and the reason its JSON could not be read."""
    if run.status != "ok":
        return [], ""
    try:
        return bench.figures(run.result, bench.size(size)), ""
    except (KeyError, TypeError, ValueError, StopIteration) as exc:
        return [], f"unreadable {bench.output}: {type(exc).__name__}: {exc}"


# --- the table -------------------------------------------------------------------------------------

def fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def ratio(f: Figure) -> str:
    """How many times better ours is than the baseline (>1 is better, either direction)."""
    if f.ours is None or f.baseline is None or not f.ours or not f.baseline:
        return "-"
    if any(isinstance(v, float) and math.isnan(v) for v in (f.ours, f.baseline)):
        return "-"
    r = f.ours / f.baseline if f.higher_is_better else f.baseline / f.ours
    return f"{r:.2f}x"


def format_table(figures: Sequence[Figure], failures: Sequence[tuple[str, str]] = ()) -> str:
    """The one table: figure, ours, baseline, ratio (ours better when > 1), size, note."""
    head = ("figure", "unit", "ours", "baseline", "vs", "better x", "size / note")
    rows = [(f.figure, f.unit, fmt(f.ours), fmt(f.baseline), f.baseline_name or "-",
             ratio(f), "; ".join(x for x in (f.size, f.note) if x)) for f in figures]
    rows += [(f"{name}: FAILED", "", "-", "-", "-", "-", error) for name, error in failures]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    right = {2, 3, 5}

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if i in right else c.ljust(w)
               for i, (c, w) in enumerate(zip(cells, widths, strict=False))]
        return "  ".join([*out, cells[-1]]).rstrip()

    rule = "  ".join("-" * w for w in widths) + "  " + "-" * 11
    return "\n".join([line(head), rule, *map(line, rows)])


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True, check=False).stdout.strip()
    return done.stdout.strip() + ("-dirty" if dirty else "") if done.returncode == 0 else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated bench names (default: all)")
    parser.add_argument("--size", choices=SIZES, default="quick",
                        help="quick: make bench; full: each bench's default; smoke: make test")
    parser.add_argument("--work-dir", type=Path, default=REPO,
                        help="benches run here and write its bench-out/ (default: the repo)")
    args = parser.parse_args(argv)
    out_dir = args.work_dir.resolve() / "bench-out"
    unknown = set(args.only.split(",")) - {b.name for b in BENCHES} if args.only else set()
    if unknown:
        parser.error(f"unknown bench {', '.join(sorted(unknown))}; "
                     f"known: {', '.join(b.name for b in BENCHES)}")
    chosen = [b for b in BENCHES if not args.only or b.name in args.only.split(",")]
    out_dir.mkdir(parents=True, exist_ok=True)
    started, load_before = time.time(), os.getloadavg()
    runs = [run_bench(b, args.work_dir.resolve(), args.size) for b in chosen]
    return report(chosen, runs, out_dir, args.size, started=started, load_before=load_before,
                  cost_model=not args.only)


def report(chosen: Sequence[Bench], runs: Sequence[BenchRun], out_dir: Path, size: str, *,
           started: float, load_before: tuple[float, float, float], cost_model: bool) -> int:
    """Prints the table of the runs (and the cost model's totals from their JSON) and writes
    out_dir/results.json; 1 if any bench failed or gave no readable JSON."""
    results = out_dir / "results.json"
    figures: list[Figure] = []
    failures: list[tuple[str, str]] = []
    for bench, run in zip(chosen, runs, strict=True):
        rows, problem = figures_of(run, bench, size)
        if problem:
            run.status, run.error = "failed", problem
        if run.status != "ok":
            failures.append((bench.name, run.error))
        figures += rows
    if cost_model:
        rows, problem = cost_figures(out_dir)
        figures += rows
        if problem:
            failures.append(("cost_model", problem))
    load_after = os.getloadavg()
    total = time.time() - started
    print(f"\nbench: {len(runs)} benches in {total:.0f} s on {os.cpu_count()} cores; load "
          f"average {load_before[0]:.1f} before, {load_after[0]:.1f} after (a shared machine: "
          f"compare the ratios, each measured against its baseline in the same run)\n")
    print(format_table(figures, failures))
    results.write_text(json.dumps({
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "git_commit": git_commit(), "cpus": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": load_after,
        "seconds": round(total, 1),
        "figures": [{**asdict(f), "ratio": ratio(f)} for f in figures],
        "benches": {r.name: {"status": r.status, "seconds": round(r.seconds, 1),
                             "error": r.error, "args": list(b.args(size)),
                             "size": b.size(size),
                             "result": r.result} for b, r in zip(chosen, runs, strict=True)},
    }, indent=1) + "\n")
    print(f"\nwrote {results.relative_to(REPO) if results.is_relative_to(REPO) else results}")
    return 1 if failures else 0

if __name__ == "__main__":
    raise SystemExit(main())
