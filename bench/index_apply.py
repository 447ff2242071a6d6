"""The namespace index's rate applying ranges for one cluster at DynamoDB's latency, beside the previous
design measured in the same run.

    python -m bench.index_apply [--ops 60000] [--latency-ms 5] [--baseline-ref REF]
                                [--no-baseline]
    python -m bench.index_apply --workload big-renames [--groups 20 --dirs 50 --files 22]

Workload `jobs` (bench-out/index_apply.json): tests.kit.workload's edit log (jobs writing part
files under `_temporary`, renaming them into place, deleting `_temporary` at depth 4-5,
appends, retention deletes of partitions, chmod/chown/touch), translated as the agent does,
every path indexed (`/`). Workload `big-renames` (bench-out/index_walks.json, issue 32 item 4):
tests.kit.big_renames, a tree of groups x dirs x files files (23,170 entries by default, over
the 20,000 a chunk lists) and a hot directory, renamed three times, a subtree of it deleted and
created again, a rename chain across chunks; its previous design is the walk of 16 directories
a step (WALK_BASELINE_REF).
The events are applied in order as the sequencer applies a range: the index's own chunks
(`sequencer.CHUNK_EVENTS`), one position UpdateItem per chunk and per walk step, every walk
finished before the next chunk.

DynamoDB is moto in-process (the kit's moto_dynamodb_lock applied: parallel writes to a new
partition all land) behind the real boto3 client; a `before-send` hook on that client
sleeps `--latency-ms` per request (5 ms: DynamoDB's usual round trip), in the calling thread,
so requests issued together wait together, as they would on the wire. Counted on the wire:
requests by operation, write units (each item written, 1 per started KB of its size as
DynamoDB computes it: names plus values), round trips waited (a request starting while no
other is in flight starts one), and latency rounds: each round trip counted as deep as the
most requests one connection of the client's pool sent one after another in it (a wave of
2,000 Queries on 16 connections waits 125 latencies, not one). Moto's own CPU time comes on
top of the sleep, on this process's one GIL, so the measured events/s is a floor; "at 5
ms/trip" is the indexed events over the round trips waited times the latency, the rate
DynamoDB itself would allow with every wave's requests in flight at once.

The previous design runs from git, in the same run: `git archive <baseline-ref>` of lambdas/,
hdfs_events/, onprem_agent/ and bench/ into a temporary directory, this very file copied in,
and a subprocess there drives that tree's index (the converge-in-any-order entries, 200-event
chunks, conditional PutItems). Each run's live entries are compared with the in-order replay
(tests.kit.replay, of each tree): a path the events created must hold its attributes, one
they deleted must not be live (paths older than the log, learnt by the index, count apart);
the bench fails when this tree's index differs. Writes bench-out/index_apply.json.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

OUT = Path("bench-out/index_apply.json")
TABLE = "bench-index"
CLUSTER = "bench"
OUT_WALKS = Path("bench-out/index_walks.json")
# The last commit of the converge-in-any-order index (issue 18 replaced it).
BASELINE_REF = "bcab644"
# The last commit of the table walk of 16 directories a step (issue 32 item 4 replaced it).
WALK_BASELINE_REF = "6c5fac6"
ATTRIBUTES = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
              "symlink_target")


class Wire:
    """The client's requests: a sleep per request, counts, write units, round trips waited."""

    def __init__(self, client: Any, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls: Counter[str] = Counter()
        self.write_units = 0
        self.trips = 0
        self.rounds = 0
        self._in_flight = 0
        self._wave: Counter[int] = Counter()  # requests per thread in this round trip
        self._lock = threading.Lock()
        client.meta.events.register("before-parameter-build.dynamodb", self._count)
        client.meta.events.register_first("before-send.dynamodb", self._send)
        client.meta.events.register("after-call.dynamodb", self._done)

    def _count(self, params: dict, model: Any, **_: Any) -> None:
        units = 0
        if model.name == "BatchWriteItem":
            units = sum(_units(r["PutRequest"]["Item"]) for rs in params["RequestItems"].values()
                        for r in rs if "PutRequest" in r)
        elif model.name == "PutItem":
            units = _units(params["Item"])
        elif model.name == "UpdateItem":
            units = 1
        with self._lock:
            self.calls[model.name] += 1
            self.write_units += units

    def _send(self, **_: Any) -> None:
        with self._lock:
            if self._in_flight == 0:
                self.trips += 1
                self.rounds += max(self._wave.values(), default=0)
                self._wave.clear()
            self._in_flight += 1
            self._wave[threading.get_ident()] += 1
        time.sleep(self.latency_s)

    def latency_rounds(self) -> int:
        with self._lock:
            return self.rounds + max(self._wave.values(), default=0)

    def _done(self, **_: Any) -> None:
        with self._lock:
            self._in_flight -= 1


def _units(item: dict) -> int:
    """Write units of an item (wire format): 1 per started KB of names and values."""
    return max(1, math.ceil(sum(len(k.encode()) + _size(v) for k, v in item.items()) / 1024))


def _size(value: dict) -> int:
    (kind, v), = value.items()
    if kind in ("S", "N", "B"):
        return len(str(v).encode())
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _size(x) for k, x in v.items())
    if kind == "L":
        return 3 + sum(_size(x) for x in v)
    return len(json.dumps(v))


def workload(ops: int) -> list[Any]:
    """The `jobs` workload's events."""
    from onprem_agent.editlog import read_ops
    from onprem_agent.translate import translate_ops
    from tests.kit.workload import write_edit_log
    buf = io.StringIO()
    write_edit_log(buf, ops=ops, seed=18)
    return list(translate_ops(read_ops(io.BytesIO(buf.getvalue().encode())), CLUSTER))


def big_renames(groups: int, dirs: int, files: int) -> list[Any]:
    from tests.kit.big_renames import big_renames as events
    return events(groups, dirs, files, cluster=CLUSTER, root="/data")


def worker(events: list[Any], latency_ms: float) -> dict[str, Any]:
    """Drives this tree's index (the current one, or the baseline's copy) in order."""
    import boto3
    from moto import mock_aws

    from lambdas.ingest import sequencer
    from lambdas.ingest.index import NamespaceIndex
    from tests.kit import moto_dynamodb_lock
    try:
        from lambdas.ingest.clients import CLIENT_CONFIG
        from lambdas.ingest.index_table import DynamoIndexStore
    except ImportError:  # the baseline's tree, from before lambdas/ingest/dal.py was split
        from lambdas.ingest.dal import CLIENT_CONFIG, DynamoIndexStore  # type: ignore

    # The store writes a chunk as 16 parallel BatchWriteItem calls; without the lock, moto can
    # drop the first items of a new partition written from two threads at once (the kit's
    # moto_dynamodb_lock.py): the smoke once found 4 of a sharded directory's 150 files missing.
    moto_dynamodb_lock.apply()
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="eu-west-1",
                           config=CLIENT_CONFIG.merge(boto3.session.Config(
                               max_pool_connections=16)))
        ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "parent", "KeyType": "HASH"},
                                    {"AttributeName": "name", "KeyType": "RANGE"}],
                         AttributeDefinitions=[{"AttributeName": "parent", "AttributeType": "S"},
                                               {"AttributeName": "name", "AttributeType": "S"}])
        wire = Wire(ddb, latency_ms / 1000)
        index = NamespaceIndex(DynamoIndexStore(TABLE, ddb), ["/"])
        indexed = [e for e in events if index.relevant(e)]
        chunk = sequencer.CHUNK_EVENTS

        def advance() -> None:  # the sequencer's position save
            ddb.update_item(TableName=TABLE, Key={"parent": {"S": f"{CLUSTER}!position"},
                                                  "name": {"S": "-"}},
                            UpdateExpression="SET txid = :t",
                            ExpressionAttributeValues={":t": {"N": "1"}})

        start = time.perf_counter()
        done = 0
        while done < len(indexed):
            applied = index.apply_until_walk(indexed[done:done + chunk])
            taken, walk = ((applied.taken, applied.walk) if hasattr(applied, "taken")
                           else applied)  # the baseline returns (taken, walk)
            done += taken
            advance()
            while walk is not None:
                left = index.resume(walk)
                walk = left[0] if isinstance(left, tuple) else left
                advance()
        seconds = time.perf_counter() - start
        live = _live(ddb)
    from tests.kit.replay import in_order_state
    seen: set[str] = set()
    want = {p: [str(v.get(a)) for a in ATTRIBUTES] for p, v in in_order_state(
        events, "/", seen).items()}
    # A directory something live sits under exists, whatever the log said of it before.
    holding = {q[:i] for q in want for i in range(1, len(q)) if q[i] == "/"}
    wrong = [p for p in sorted(want.keys() | live.keys())
             if (p in want and live.get(p) != want[p])
             or (p not in want and p in seen and p not in holding)]
    n = len(indexed)
    return {"indexed_events": n, "seconds": seconds, "events_per_s": n / seconds,
            "requests": dict(wire.calls), "requests_per_1000": 1000 * sum(wire.calls.values()) / n,
            "round_trips_per_1000": 1000 * wire.trips / n,
            "write_units_per_1000": 1000 * wire.write_units / n,
            "events_per_s_at_latency": n / (wire.trips * latency_ms / 1000),
            "latency_rounds_per_1000": 1000 * wire.latency_rounds() / n,
            "events_per_s_at_latency_rounds": n / (wire.latency_rounds() * latency_ms / 1000),
            "live_entries": len(live), "differences": len(wrong), "first_differences": wrong[:5]}


def _live(ddb: Any) -> dict[str, list[Any]]:
    from boto3.dynamodb.types import TypeDeserializer
    de = TypeDeserializer()
    live = {}
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE):
        for raw in page["Items"]:
            item = {k: de.deserialize(v) for k, v in raw.items()}
            if "#" in item["parent"].split("!")[0] and not item.get("deleted"):
                live[item["path"]] = [str(item.get(a)) for a in ATTRIBUTES]
    return live


def run_tree(root: Path, workload_args: list[str], latency_ms: float) -> dict[str, Any]:
    repo = Path(__file__).resolve().parent.parent
    # tests.kit (the workloads, the replay) comes from this checkout; lambdas from `root`.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, (str(root), str(repo), os.environ.get("PYTHONPATH"))))}
    out = subprocess.run(
        [sys.executable, "-m", "bench.index_apply", "--worker", *workload_args,
         "--latency-ms", str(latency_ms)], cwd=root, capture_output=True, text=True,
        check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"bench.index_apply worker in {root} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_tree(ref: str, into: Path) -> Path:
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "archive", ref, "lambdas", "hdfs_events", "onprem_agent",
                              "bench"], cwd=repo, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    shutil.copy(Path(__file__), into / "bench" / "index_apply.py")
    return into


def row(name: str, r: dict[str, Any]) -> str:
    return (f"{name:<34} {r['events_per_s']:>10,.0f} {r['events_per_s_at_latency']:>12,.0f} "
            f"{r['round_trips_per_1000']:>9.1f} {r.get('latency_rounds_per_1000', 0):>10.1f} "
            f"{r['requests_per_1000']:>9.1f} {r['write_units_per_1000']:>9.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=("jobs", "big-renames"), default="jobs")
    parser.add_argument("--ops", type=int, default=60_000, help="jobs: edit log records")
    parser.add_argument("--groups", type=int, default=20, help="big-renames: top directories")
    parser.add_argument("--dirs", type=int, default=50, help="big-renames: directories a group")
    parser.add_argument("--files", type=int, default=22, help="big-renames: files a directory")
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--baseline-ref", help=f"jobs: {BASELINE_REF}; big-renames: "
                        f"{WALK_BASELINE_REF}")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    walks = args.workload == "big-renames"
    sizes = (["--groups", str(args.groups), "--dirs", str(args.dirs), "--files",
              str(args.files)] if walks else ["--ops", str(args.ops)])
    if args.worker:
        events = (big_renames(args.groups, args.dirs, args.files) if walks
                  else workload(args.ops))
        print(json.dumps(worker(events, args.latency_ms)))
        return 0
    baseline_ref = args.baseline_ref or (WALK_BASELINE_REF if walks else BASELINE_REF)
    repo = Path(__file__).resolve().parent.parent
    workload_args = ["--workload", args.workload, *sizes]
    results = {"current": run_tree(repo, workload_args, args.latency_ms)}
    if not args.no_baseline:
        with tempfile.TemporaryDirectory() as tmp:
            results["previous"] = run_tree(baseline_tree(baseline_ref, Path(tmp)),
                                           workload_args, args.latency_ms)
    print(f"{'applying ranges, ' + str(args.latency_ms) + ' ms/request':<34} {'events/s':>10} "
          f"{'at latency':>12} {'trips/1k':>9} {'rounds/1k':>10} {'reqs/1k':>9} {'WCU/1k':>9}")
    print(row("in order, batched (this tree)", results["current"]))
    if "previous" in results:
        print(row(f"previous design ({baseline_ref})", results["previous"]))
    out = OUT_WALKS if walks else OUT
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"workload": args.workload, "sizes": sizes,
                               "ops": args.ops, "latency_ms": args.latency_ms,
                               "baseline_ref": baseline_ref, **results}, indent=2))
    for name, r in results.items():
        print(f"{name}: {r['live_entries']} live entries, {r['differences']} differing from the "
              f"in-order replay {r['first_differences']}")
    if results["current"]["differences"]:
        print("FAILED: the index differs from the in-order replay", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
