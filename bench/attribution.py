"""The attribution join's rows per second (glue_jobs/attribution.py on a local SparkSession)
beside a single-process baseline measured in the same run: the same matching core
(glue_jobs.attribution_match.match_group) over plain Python dicts, no Spark.

    python -m bench.attribution [--events 200000] [--users 50] [--paths 20000] [--rounds 2]

Input (generated in Python, deterministic): events of one cluster in txid order, a NameNode
time 2 ms apart, from users working on a shared set of paths: CREATE then CLOSE, APPEND then
CLOSE, METADATA PERMS (no timestamp), RENAME, UNLINK; one allowed audit line per call 1 to 9 ms
after its edit, so lines of calls close in time come out of txid order; 1 call in 50 also leaves
a refused line. The figure is events attributed per second of wall time, each side's best round
(the machine is shared: both sides run in the same process, alternating). Both sides must give
the same users, else the bench fails.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench import OUT_DIR

CLUSTER = "bench"
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def generate(n_events: int, users: int, paths: int, seed: int = 7
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from hdfs_events.event import FIELDS

    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    empty = dict.fromkeys(FIELDS)
    txid = 0

    def call(user: str, cmd: str, src: str, dst: str | None, perm: str | None, ts: int) -> None:
        lines.append({"cluster": CLUSTER, "host": "nn1", "file_id": "f1",
                      "offset": len(lines) * 200, "time": ts + rng.randint(1, 9),
                      "allowed": True, "user": user, "auth": "KERBEROS", "real_user": None,
                      "real_auth": None, "ip": "10.0.0.1", "cmd": cmd, "options": None,
                      "src": src, "dst": dst, "perm": perm, "proto": "rpc",
                      "caller_context": None, "raw": None, "reason": None})
        if rng.random() < 0.02:
            lines.append({**lines[-1], "offset": len(lines) * 200, "allowed": False,
                          "user": f"u{rng.randrange(users)}"})

    while len(events) < n_events:
        user, path = f"u{rng.randrange(users)}", f"/data/p{rng.randrange(paths)}"
        kind = rng.randrange(5)
        ts = T0 + 2 * txid
        base = {**empty, "cluster": CLUSTER, "index": 0, "path": path}
        if kind in (0, 1):  # a write: CREATE or APPEND, then its CLOSE
            if kind == 0:
                events.append({**base, "txid": txid, "type": "CREATE", "timestamp": ts,
                               "inode_type": "FILE", "ctime": ts, "owner": user,
                               "group": "hadoop", "perms": "0644"})
                call(user, "create", path, None, f"{user}:hadoop:rw-r--r--", ts)
            else:
                events.append({**base, "txid": txid, "type": "APPEND", "new_block": False})
                call(user, "append", path, None, None, ts)
            txid += 1
            events.append({**base, "txid": txid, "type": "CLOSE", "timestamp": ts + 2,
                           "size": 100})
        elif kind == 2:
            events.append({**base, "txid": txid, "type": "METADATA", "metadata_type": "PERMS",
                           "perms": "0600"})
            call(user, "setPermission", path, None, "x:hadoop:rw-------", ts)
        elif kind == 3:
            events.append({**base, "txid": txid, "type": "RENAME", "timestamp": ts,
                           "dst_path": path + ".old"})
            call(user, "rename", path, path + ".old", None, ts)
        else:
            events.append({**base, "txid": txid, "type": "UNLINK", "timestamp": ts})
            call(user, "delete", path, None, None, ts)
        txid += 1
    return events, lines


def baseline(events: list[dict[str, Any]], lines: list[dict[str, Any]], window_ms: int
             ) -> dict[tuple[int, int], str | None]:
    """The transform's rules in one process over dicts: bounds, groups, match_group, the txid
    rule and the CLOSE rule."""
    from glue_jobs.attribution_match import (
        AUDIT_CLASSES,
        EventSide,
        LineSide,
        event_class,
        match_group,
    )

    ordered = sorted(events, key=lambda e: (e["txid"], e["index"]))
    lo: list[int | None] = []
    last = None
    for e in ordered:
        last = e["timestamp"] if e["timestamp"] is not None else last
        lo.append(last)
    hi: list[int | None] = [None] * len(ordered)
    nxt = None
    for i in range(len(ordered) - 1, -1, -1):
        nxt = ordered[i]["timestamp"] if ordered[i]["timestamp"] is not None else nxt
        hi[i] = nxt
    groups: dict[tuple[str, str, str], tuple[list[EventSide], list[LineSide]]] = defaultdict(
        lambda: ([], []))
    for i, e in enumerate(ordered):
        in_concat = i + 1 < len(ordered) and ordered[i + 1]["txid"] == e["txid"]
        cls = event_class(e["type"], e["inode_type"], e["metadata_type"],
                          e["xattrs_removed"], in_concat)
        if e["index"] == 0 and cls is not None:
            sources = [x["path"] for x in ordered[i + 1:i + 1 + 64]
                       if x["txid"] == e["txid"] and x["type"] == "UNLINK"]
            key = (cls, e["path"], e["dst_path"] if cls == "rename"
                   else f"[{', '.join(sources)}]" if cls == "concat" else "")
            groups[key][0].append(EventSide(e["txid"], lo[i], hi[i], e["owner"], e["group"],
                                            e["perms"]))
    for x in lines:
        cls = AUDIT_CLASSES.get(x["cmd"] or "")
        if x["allowed"] and cls is not None:
            key = (cls, x["dst"] if cls == "concat" else x["src"],
                   x["dst"] if cls == "rename" else x["src"] if cls == "concat" else "")
            if key in groups:
                groups[key][1].append(LineSide(
                    x["time"], x["host"], x["file_id"], x["offset"], x["user"], x["auth"],
                    x["real_user"], x["ip"], x["caller_context"], x["perm"]))
    by_txid: dict[int, str | None] = {}
    for (cls, _, _), (evs, lns) in groups.items():
        for txid, x in match_group(cls, evs, lns, window_ms).items():
            by_txid[txid] = x.user
    out: dict[tuple[int, int], str | None] = {}
    previous: dict[str, dict[str, Any]] = {}
    for e in ordered:
        if e["type"] == "CLOSE":
            before = previous.get(e["path"])
            if before is not None and before["type"] in ("CREATE", "APPEND", "TRUNCATE") \
                    and (before["txid"], before["index"]) in out:
                out[(e["txid"], e["index"])] = out[(before["txid"], before["index"])]
        elif e["txid"] in by_txid:
            out[(e["txid"], e["index"])] = by_txid[e["txid"]]
        if e["type"] in ("APPEND", "TRUNCATE", "CLOSE", "UNLINK", "RENAME") or (
                e["type"] == "CREATE" and e["inode_type"] == "FILE"):
            previous[e["path"]] = e
        if e["type"] == "RENAME":
            previous[e["dst_path"]] = e
    return out


def spark_side(spark: Any, events: list[dict[str, Any]], lines: list[dict[str, Any]],
               window_ms: int, workdir: Path) -> tuple[float, dict[tuple[int, int], str]]:
    """Seconds to attribute (Parquet input read, rows collected), and the users."""
    from glue_jobs.attribution import attribute_events
    from glue_jobs.audit_schema import AUDIT_RECORD_SCHEMA
    from glue_jobs.schema import EVENT_SCHEMA

    ev, au = workdir / "events.parquet", workdir / "audit.parquet"
    if not ev.exists():
        spark.createDataFrame([tuple(e[f.name] for f in EVENT_SCHEMA.fields) for e in events],
                              EVENT_SCHEMA).write.parquet(str(ev))
        spark.createDataFrame([tuple(x[f.name] for f in AUDIT_RECORD_SCHEMA.fields)
                               for x in lines], AUDIT_RECORD_SCHEMA).write.parquet(str(au))
    started = time.perf_counter()
    rows = attribute_events(spark.read.parquet(str(ev)), spark.read.parquet(str(au)),
                            window_ms).select("txid", "index", "user").collect()
    return time.perf_counter() - started, {(r["txid"], r["index"]): r["user"] for r in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.attribution",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--paths", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT_DIR / "attribution.json")
    args = parser.parse_args(argv)
    import shutil

    from pyspark.sql import SparkSession

    from glue_jobs.attribution import DEFAULT_WINDOW_MS

    events, lines = generate(args.events, args.users, args.paths)
    workdir = OUT_DIR / f"attribution-input-{args.events}-{args.users}-{args.paths}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    spark = (SparkSession.builder.master("local[2]").appName("bench-attribution")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_s, python_s = [], []
        for _ in range(args.rounds):
            seconds, got = spark_side(spark, events, lines, DEFAULT_WINDOW_MS, workdir)
            spark_s.append(seconds)
            started = time.perf_counter()
            want = baseline(events, lines, DEFAULT_WINDOW_MS)
            python_s.append(time.perf_counter() - started)
            if got != want:
                differ = sorted(set(got.items()) ^ set(want.items()))[:5]
                raise SystemExit(f"bench.attribution: Spark and the baseline differ: {differ}")
    finally:
        spark.stop()
    n = len(events)
    result = {"events": n, "audit_lines": len(lines), "attributed": len(want),
              "spark_s": min(spark_s), "python_s": min(python_s),
              "spark_rows_per_s": n / min(spark_s), "python_rows_per_s": n / min(python_s)}
    print(f"attribution join, {n:,} events x {len(lines):,} audit lines "
          f"({len(want) / n:.1%} attributed), best of {args.rounds}: Spark local[2] "
          f"{result['spark_rows_per_s']:,.0f} rows/s ({result['spark_s']:.1f} s), single "
          f"process dicts {result['python_rows_per_s']:,.0f} rows/s ({result['python_s']:.1f}"
          f" s), ratio {result['spark_rows_per_s'] / result['python_rows_per_s']:.2f}")
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
