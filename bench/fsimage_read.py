"""Reading an fsimage into (path, inode) rows: glue_jobs.fsimage_format beside Hadoop's own
`hdfs oiv -p Delimited` on the same image, same run.

    python -m bench.fsimage_read [--files 100000] [--rounds 3] [--out bench-out/fsimage_read.json]

The image is the kit's namespace of --files files (tests/kit/hadoop/namespace_image.py, built
by Hadoop's Offline Image Reconstructor, cached in .hadoop/namespaces). Best of --rounds:
- `ours`: read the file and `read_namespace` it (summary, string table, INODE, INODE_REFERENCE,
  INODE_DIR, every path joined), in this one Python process.
- `oiv`: OfflineImageViewerPB -p Delimited in a JVM of its own, writing its TSV (what an
  operator runs for the same listing). Its wall time holds the JVM's start, which is measured
  apart (`oiv -h`: the JVM, the class loaded, usage printed) and reported; the baseline figure is
  oiv's rows per wall second with that start taken out. Its CPU time (every JVM thread, start
  included) is reported beside ours: on a loaded machine CPU time is the steadier figure.
Ours must equal oiv's listing on every row and column (as tests/integration/hdfs/
test_fsimage_reader.py checks), or the run exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from bench import OUT_DIR
from glue_jobs.fsimage_format import read_summary
from glue_jobs.fsimage_inodes import INode, INodeKind
from glue_jobs.fsimage_namespace import read_namespace
from tests.kit.hadoop.jars import LIB, java
from tests.kit.hadoop.namespace_image import as_delimited, delimited_listing, namespace_image


def _children_cpu_s() -> float:
    """CPU seconds of this process's finished children: the oiv JVM's every thread (its
    parallel GC and JIT included), steadier than wall time on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def jvm_start_s() -> float:
    started = time.perf_counter()
    subprocess.run([java(), "-Xmx256m", "-cp", str(LIB / "*"),
                    "org.apache.hadoop.hdfs.tools.offlineImageViewer.OfflineImageViewerPB",
                    "-h"], capture_output=True, check=True, timeout=120)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fsimage_read", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT_DIR / "fsimage_read.json")
    args = parser.parse_args(argv)

    built = namespace_image(args.files)
    image = next((built.name_dir / "current").glob("fsimage_" + "[0-9]" * 19))
    size = image.stat().st_size
    summary = read_summary(image.read_bytes())

    best_cpu = best_wall = float("inf")
    rows: list[tuple[str, INode]] = []
    for _ in range(args.rounds):
        rows = []  # the previous round's rows are not kept alive while this one runs
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rows = list(read_namespace(image.read_bytes()))
        best_cpu = min(best_cpu, time.process_time() - cpu0)
        best_wall = min(best_wall, time.perf_counter() - wall0)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with tempfile.TemporaryDirectory(prefix="fsimage-oiv-") as work:
        start_s = min(jvm_start_s() for _ in range(args.rounds))
        oiv_wall = oiv_cpu = float("inf")
        listing: dict[str, dict[str, str]] = {}
        for _ in range(args.rounds):
            cpu0 = _children_cpu_s()
            listing, seconds = delimited_listing(image, Path(work) / "oiv.tsv")
            oiv_wall = min(oiv_wall, seconds)
            oiv_cpu = min(oiv_cpu, _children_cpu_s() - cpu0)
    ours = {path: as_delimited(path, node) for path, node in rows}
    differ = sum(1 for p in ours.keys() | listing.keys() if ours.get(p) != listing.get(p))
    same = differ == 0 and len(ours) == len(rows)

    n = len(rows)
    files = sum(1 for _, node in rows if node.kind is INodeKind.FILE)
    oiv_work = max(oiv_wall - start_s, 1e-3)
    results = {
        "ours": {"cpu_s": round(best_cpu, 3), "wall_s": round(best_wall, 3),
                 "rows_per_cpu_s": round(n / best_cpu), "rows_per_wall_s": round(n / best_wall),
                 "peak_rss_mb": round(peak_rss_mb)},
        "oiv": {"wall_s": round(oiv_wall, 3), "jvm_start_s": round(start_s, 3),
                "cpu_s": round(oiv_cpu, 3), "rows_per_cpu_s": round(n / oiv_cpu),
                "rows_per_wall_s": round(n / oiv_wall),
                "rows_per_wall_s_without_start": round(n / oiv_work)},
    }
    load = os.getloadavg()[0]
    print(f"\nReading the kit's fsimage of {args.files:,} files ({n:,} rows: {files:,} files, "
          f"{n - files:,} directories; {size / 2**20:.1f} MiB, {len(summary.sections)} "
          f"sections), best of {args.rounds}, load average {load:.1f} on {os.cpu_count()} "
          "cores\n")
    print(f"{'':32} {'rows/wall s':>12} {'wall s':>8}")
    print(f"{'oiv -p Delimited (JVM start out)':32} "
          f"{results['oiv']['rows_per_wall_s_without_start']:>12,} {oiv_work:>8.2f}")
    print(f"{'oiv -p Delimited (whole run)':32} {results['oiv']['rows_per_wall_s']:>12,} "
          f"{oiv_wall:>8.2f}")
    print(f"{'ours (read_namespace)':32} {results['ours']['rows_per_wall_s']:>12,} "
          f"{best_wall:>8.2f}")
    print(f"\nJVM start (oiv -h): {start_s:.2f} s. Per CPU second (all threads): ours "
          f"{results['ours']['rows_per_cpu_s']:,} rows, oiv {results['oiv']['rows_per_cpu_s']:,}"
          f" (JVM start in); ours peak RSS {peak_rss_mb:.0f} MiB")
    print(f"ours / oiv without its JVM start: "
          f"{results['ours']['rows_per_wall_s'] / results['oiv']['rows_per_wall_s_without_start']:.2f}x"
          f"   every row and column equal to oiv's: {'yes' if same else f'NO ({differ} differ)'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "files": args.files, "rows": n, "image_bytes": size, "sections": len(summary.sections),
        "rounds": args.rounds, "load_average": load, "same_rows": same, "rows_differ": differ,
        "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
