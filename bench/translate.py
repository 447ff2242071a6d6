"""Edit-log translation speed and memory: ours beside a naive stdlib baseline, same run.

    python -m bench.translate [--ops 1000000] [--seed 0] [--out bench-out/translate.json]

Generates (once, cached under bench-out/) a realistic edit log with tests.kit.workload, then
translates it in a fresh subprocess per contender, one after the other on the same file:
- `ours`: onprem_agent.editlog.read_ops + onprem_agent.translate.translate_ops.
- `baseline`: ElementTree.iterparse with root.clear() and findtext for every field, the
  approach FACTS.md measured at ~68k records/s.
Both must yield the same events (count and a digest of every event's key, type and path), so
the speed-up is not bought with a wrong answer. Speed is ops per CPU second of the child (one
core; the machine is shared, CPU time is steadier than wall time), with wall time beside it.
Memory is the child's peak RSS, and its RSS after 25%, 50%, 75% and 100% of the ops, to show
it stays flat.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from bench import OUT_DIR
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType, XAttr, perms_to_octal
from onprem_agent.editlog import unmangle

REPO = Path(__file__).resolve().parent.parent
TARGET_OPS_PER_S = 100_000


def edit_log(ops: int, seed: int) -> Path:
    """The cached generated edit log (regenerated if the generator's output would differ)."""
    from tests.kit import workload

    OUT_DIR.mkdir(exist_ok=True)
    stamp = hashlib.sha256(Path(workload.__file__).read_bytes()).hexdigest()[:12]
    path = OUT_DIR / f"edits-{ops}-seed{seed}-{stamp}.xml"
    if not path.exists():
        t = time.perf_counter()
        tmp = path.with_suffix(".tmp")
        workload.write_edit_log(tmp, ops=ops, seed=seed, mass_delete=min(10_000, ops // 100))
        tmp.rename(path)
        print(f"generated {path.name} ({path.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


# --- the baseline: iterparse + findtext, every record built as a tree ---------------------------

def baseline_events(path: Path, cluster: str) -> Iterator[HdfsEvent]:
    root = None
    for event, elem in ET.iterparse(path, events=("start", "end")):
        if root is None:
            root = elem
            continue
        if event != "end" or elem.tag != "RECORD":
            continue
        opcode = elem.findtext("OPCODE")
        data = elem.find("DATA")
        yield from _baseline_translate(opcode, data, cluster)  # type: ignore[arg-type]
        root.clear()


def _baseline_translate(opcode: str, d: ET.Element, c: str) -> list[HdfsEvent]:
    txid = int(d.findtext("TXID"))  # type: ignore[arg-type]

    def ev(i: int, t: EventType, path: str | None, **kw: object) -> HdfsEvent:
        if kw.get("dst_path"):
            kw["dst_path"] = unmangle(kw["dst_path"])  # type: ignore[arg-type]
        return HdfsEvent(cluster=c, txid=txid, index=i, type=t,  # type: ignore[arg-type]
                         path=unmangle(path), **kw)  # type: ignore[arg-type]

    def perm() -> tuple[str | None, str | None, str]:
        return (d.findtext("PERMISSION_STATUS/USERNAME"), d.findtext("PERMISSION_STATUS/GROUPNAME"),
                perms_to_octal(int(d.findtext("PERMISSION_STATUS/MODE"))))  # type: ignore

    n = lambda tag: int(d.findtext(tag))  # type: ignore[arg-type]  # noqa: E731
    if opcode == "OP_ADD":
        if d.find("BLOCK") is not None:
            return [ev(0, EventType.APPEND, d.findtext("PATH"), new_block=False)]
        o, g, p = perm()
        return [ev(0, EventType.CREATE, d.findtext("PATH"), timestamp=n("ATIME"),
                   inode_type=INodeType.FILE, ctime=n("ATIME"), replication=n("REPLICATION"),
                   owner=o, group=g, perms=p, overwrite=d.findtext("OVERWRITE") == "true",
                   block_size=n("BLOCKSIZE"),
                   erasure_coded=int(d.findtext("ERASURE_CODING_POLICY_ID") or 0) != 0)]
    if opcode == "OP_CLOSE":
        size = sum(int(b.findtext("NUM_BYTES")) for b in d.findall("BLOCK"))  # type: ignore
        return [ev(0, EventType.CLOSE, d.findtext("PATH"), size=size, timestamp=n("MTIME"))]
    if opcode == "OP_APPEND":
        return [ev(0, EventType.APPEND, d.findtext("PATH"),
                   new_block=d.findtext("NEWBLOCK") == "true")]
    if opcode in ("OP_RENAME_OLD", "OP_RENAME"):
        return [ev(0, EventType.RENAME, d.findtext("SRC"), dst_path=d.findtext("DST"),
                   timestamp=n("TIMESTAMP"))]
    if opcode == "OP_DELETE":
        return [ev(0, EventType.UNLINK, d.findtext("PATH"), timestamp=n("TIMESTAMP"))]
    if opcode == "OP_MKDIR":
        o, g, p = perm()
        return [ev(0, EventType.CREATE, d.findtext("PATH"), timestamp=n("TIMESTAMP"),
                   inode_type=INodeType.DIRECTORY, ctime=n("TIMESTAMP"), owner=o, group=g,
                   perms=p)]
    if opcode == "OP_CONCAT_DELETE":
        trg, ts = d.findtext("TRG"), n("TIMESTAMP")
        out = [ev(0, EventType.APPEND, trg, new_block=False)]
        out += [ev(i, EventType.UNLINK, s.text, timestamp=ts)
                for i, s in enumerate(d.find("SOURCES"), start=1)]  # type: ignore[arg-type]
        return [*out, ev(len(out), EventType.CLOSE, trg, size=-1, timestamp=ts)]
    meta = {"OP_SET_REPLICATION": lambda: dict(metadata_type=MetadataType.REPLICATION,
                                               replication=n("REPLICATION")),
            "OP_SET_PERMISSIONS": lambda: dict(metadata_type=MetadataType.PERMS,
                                               perms=perms_to_octal(n("MODE"))),
            "OP_SET_OWNER": lambda: dict(metadata_type=MetadataType.OWNER,
                                         owner=d.findtext("USERNAME"),
                                         group=d.findtext("GROUPNAME")),
            "OP_TIMES": lambda: dict(metadata_type=MetadataType.TIMES, mtime=n("MTIME"),
                                     atime=n("ATIME")),
            "OP_SET_XATTR": lambda: dict(metadata_type=MetadataType.XATTRS, xattrs_removed=False,
                                         xattrs=tuple(XAttr(x.findtext("NAMESPACE"),  # type: ignore
                                                            x.findtext("NAME"),
                                                            x.findtext("VALUE"))
                                                      for x in d.findall("XATTR"))),
            "OP_SET_ACL": lambda: dict(metadata_type=MetadataType.ACLS, acls=tuple(
                f"{'default:' if e.findtext('SCOPE') == 'DEFAULT' else ''}"
                f"{e.findtext('TYPE').lower()}:{e.findtext('NAME') or ''}:{e.findtext('PERM')}"  # type: ignore
                for e in d.findall("ENTRY")))}
    if opcode in meta:
        path = d.findtext("PATH") if opcode in ("OP_SET_REPLICATION", "OP_TIMES") \
            else d.findtext("SRC")
        return [ev(0, EventType.METADATA, path, **meta[opcode]())]
    if opcode == "OP_TRUNCATE":
        return [ev(0, EventType.TRUNCATE, d.findtext("SRC"), size=n("NEWLENGTH"),
                   timestamp=n("TIMESTAMP"))]
    return []


# --- one contender in a child process --------------------------------------------------------

def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def child(contender: str, path: Path, ops: int) -> dict[str, object]:
    if contender == "ours":
        from onprem_agent.editlog import read_ops
        from onprem_agent.translate import translate_ops

        events = translate_ops(read_ops(path), "bench")
    else:
        events = baseline_events(path, "bench")
    digest = hashlib.blake2b(digest_size=16)
    marks = [(ops * q // 4, f"{q * 25}%") for q in (1, 2, 3)]
    rss: dict[str, int] = {}
    count = 0
    next_mark = marks.pop(0)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for e in events:
        count += 1
        digest.update(f"{e.txid}.{e.index}.{e.type}.{e.path}\n".encode("utf-8", "surrogatepass"))
        if next_mark and e.txid >= next_mark[0]:
            rss[next_mark[1]] = _rss_kib()
            next_mark = marks.pop(0) if marks else None
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    rss["100%"] = _rss_kib()
    return {"contender": contender, "ops": ops, "events": count, "digest": digest.hexdigest(),
            "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "ops_per_cpu_s": round(ops / cpu), "ops_per_wall_s": round(ops / wall),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "rss_mib_at": {k: round(v / 1024, 1) for k, v in rss.items()}}


def run(contender: str, path: Path, ops: int) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "bench.translate", "--child", contender,
                           "--file", str(path), "--ops", str(ops)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{contender} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.translate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT_DIR / "translate.json")
    parser.add_argument("--child", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.file, args.ops)))
        return 0
    path = edit_log(args.ops, args.seed)
    results = {name: run(name, path, args.ops) for name in ("baseline", "ours")}
    ours, base = results["ours"], results["baseline"]
    same = (ours["events"], ours["digest"]) == (base["events"], base["digest"])
    load = os.getloadavg()[0]
    print(f"\nTranslating {args.ops:,} ops ({path.stat().st_size / 1e6:.0f} MB of oev XML, "
          f"{ours['events']:,} events), load average {load:.1f} on {os.cpu_count()} cores\n")
    print(f"{'':10} {'ops/CPU s':>11} {'ops/wall s':>11} {'peak RSS':>9}   RSS at 25/50/75/100%")
    for name in ("baseline", "ours"):
        r = results[name]
        at = " / ".join(f"{v:.0f}" for v in r["rss_mib_at"].values())  # type: ignore[union-attr]
        print(f"{name:10} {r['ops_per_cpu_s']:>11,} {r['ops_per_wall_s']:>11,} "
              f"{r['peak_rss_mib']:>7.0f} MiB   {at} MiB")
    ratio = ours["ops_per_cpu_s"] / base["ops_per_cpu_s"]  # type: ignore[operator]
    print(f"\nours / baseline: {ratio:.2f}x   target {TARGET_OPS_PER_S:,} ops/s: "
          f"{'met' if ours['ops_per_cpu_s'] >= TARGET_OPS_PER_S else 'NOT met'}   "  # type: ignore
          f"same events: {'yes' if same else 'NO'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"ops": args.ops, "file_bytes": path.stat().st_size,
                                    "load_average": load, "results": results,
                                    "speedup": round(ratio, 2), "same_events": same,
                                    "target_ops_per_s": TARGET_OPS_PER_S}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
