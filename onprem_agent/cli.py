"""`hdfs-events-agent`: one entry point, one module per subcommand under onprem_agent.commands.

Subcommand modules are imported only when chosen, so `translate` starts without boto3 and
`run` is the only one that pays for starting a JVM. Each module defines
`add_arguments(parser)` and `run(args) -> int` (the exit code).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from onprem_agent.subcommands import dispatch

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "translate": ("onprem_agent.commands.translate",
                  "print the inotify events of an `hdfs oev -p xml` edit log as JSON lines"),
    "replay": ("onprem_agent.commands.replay",
               "ship the events of edit-log files to the SQS FIFO queue (backfill)"),
    "run": ("onprem_agent.commands.run",
            "ship live HDFS inotify events to the SQS FIFO queue"),
    "status": ("onprem_agent.commands.status", "show checkpoint, lag and leader"),
    "doctor": ("onprem_agent.commands.doctor",
               "check config, credentials, queue, JVM, classpath and NameNode"),
    "verify": ("onprem_agent.commands.verify",
               "compare an HDFS listing with the DynamoDB namespace index"),
    "sync": ("onprem_agent.commands.sync",
             "replicate covered HDFS directories to S3 (run, status, verify)"),
    "copy-worker": ("onprem_agent.commands.copy_worker",
                    "copy data from S3 back into HDFS on request (distcp)"),
    "audit": ("onprem_agent.commands.audit",
              "ship the NameNode's audit log to the lake (on each NameNode host)"),
    "fetch-image": ("onprem_agent.commands.fetch_image",
                    "put the NameNode's latest fsimage in the lake (dfsadmin -fetchImage)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    code = dispatch("hdfs-events-agent", "Streams HDFS namespace changes (inotify) to AWS.",
                    COMMANDS, sys.argv[1:] if argv is None else argv)
    if argv is None:  # the command line: this process is ours to end
        _end_process_after_jvm(code)
    return code


def _end_process_after_jvm(code: int) -> None:
    """Ends a process that ran a JVM without Python's finalization.

    Python 3.11 ends daemon threads that still wait in JVM calls (a poll, a lease renewal)
    with pthread_exit when they next want the GIL; JPype's C++ frames catch that unwinding and
    glibc aborts the process ("FATAL: exception not rethrown", status -6), seen with a real
    NameNode under load, after the agent had already flushed and saved its checkpoint. By this
    point every command has finished its work, so nothing is lost by skipping finalization.
    """
    jpype = sys.modules.get("jpype")
    if jpype is None or not jpype.isJVMStarted():
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
