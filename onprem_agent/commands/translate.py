"""`hdfs-events-agent translate FILE.xml`: the events of an edit log, one JSON line each."""

from __future__ import annotations

import argparse
import sys

from hdfs_events.ids import validate_cluster_name
from onprem_agent.editlog import EditLogError, read_ops
from onprem_agent.translate import TranslationStats, translate_ops


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="edit log as written by `hdfs oev -p xml -i EDITS -o FILE`")
    parser.add_argument("--cluster", default="default",
                        help="cluster name stamped on every event (default: %(default)s)")
    parser.add_argument("--from-txid", type=int, default=None, metavar="N",
                        help="only events with txid > N (the inotify convention)")
    parser.add_argument("--to-txid", type=int, default=None, metavar="M",
                        help="only events with txid <= M")


def run(args: argparse.Namespace) -> int:
    try:
        cluster = validate_cluster_name(args.cluster)
    except ValueError as exc:
        print(f"hdfs-events-agent translate: --cluster: {exc}", file=sys.stderr)
        return 2
    stats = TranslationStats()
    out = sys.stdout
    try:
        ops = read_ops(args.file)
        for event in translate_ops(ops, cluster, source=args.file, from_txid=args.from_txid,
                                   to_txid=args.to_txid, stats=stats):
            out.write(event.to_json())
            out.write("\n")
    except EditLogError as exc:
        out.flush()
        print(f"hdfs-events-agent translate: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        return 0
    report_unknown_opcodes(stats, args.file)
    return 0


def report_unknown_opcodes(stats: TranslationStats, source: str) -> None:
    if stats.unknown_opcodes:
        listed = ", ".join(f"{op} x{n}" for op, n in sorted(stats.unknown_opcodes.items()))
        print(f"hdfs-events-agent: {source}: ops this translator does not know yielded no "
              f"event: {listed}", file=sys.stderr)
