"""`hdfs-events`: the cloud-side CLI (reads the namespace index, submits copy requests, takes
drift alerts).

One module per subcommand under hdfs_events_cli.commands; each defines `add_arguments(parser)`
and `run(args) -> int`. All are imported at start, unlike the agent's lazy dispatch
(onprem_agent/subcommands.py, which keeps `translate` free of boto3 and a JVM): every command
here reaches AWS, so importing them all costs no more than boto3, which each run imports anyway
(0.2 s). AWS is reached through the standard chain (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL,
...), never through flags carrying secrets.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from hdfs_events_cli.commands import copy, drift, index, quarantine, who

COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "index": (index, "read the DynamoDB namespace index: `index ls /path`, `index stat /path`"),
    "copy": (copy, "copy data from S3 back into HDFS: `copy submit ...`, `copy status REQUEST_ID`"),
    "quarantine": (quarantine,
                   "reprocess quarantined messages after a fix: `quarantine redrive --dry-run`"),
    "who": (who, "who changed a path, from the lake (Athena): `who /path --since 7d`"),
    "drift": (drift,
              "the drift alerts `hdfs-events-agent verify` sent: `drift receive --queue-url URL`"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hdfs-events", description="hdfs-events cloud-side tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return int(COMMANDS[args.command][0].run(args))


if __name__ == "__main__":
    raise SystemExit(main())
