"""`hdfs-events-agent replay --config agent.toml --edits FILE.xml [...]`: backfill from edit logs.

Translates each `hdfs oev -p xml` file exactly as the NameNode's inotify does and ships the
events through the same pipeline as the live agent, resuming after the saved checkpoint.
SIGTERM or SIGINT: seal what is open, wait for SQS to acknowledge it, save the checkpoint and
exit 0 (a second signal exits at once; the saved checkpoint stays consistent).

Exit codes: 0 done or stopped cleanly; 1 the edit log, SQS or the checkpoint store failed; 2 a
configuration error.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from botocore.exceptions import BotoCoreError

from hdfs_events.envelope import MessageTooLarge
from onprem_agent.agent_toml import ConfigError
from onprem_agent.checkpoint import CheckpointError, CheckpointStore, open_checkpoint_store
from onprem_agent.config import AgentConfig, load_config
from onprem_agent.editlog import EditLogError, read_ops
from onprem_agent.pipeline import Pipeline
from onprem_agent.progress import ProgressReporter
from onprem_agent.sender import NoopSender, PermanentSendError, Sender, SqsSender
from onprem_agent.source import TxBatch, chunked
from onprem_agent.translate import TranslationStats, translate_batches

log = logging.getLogger("hdfs-events-agent.replay")
PROG = "hdfs-events-agent replay"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, metavar="agent.toml",
                        help="the agent's TOML config (see onprem_agent/examples/agent.toml)")
    parser.add_argument("--edits", required=True, nargs="+", type=Path, metavar="FILE.xml",
                        help="edit logs as written by `hdfs oev -p xml`, in txid order")
    flags = parser.add_argument_group("overrides of the config file")
    flags.add_argument("--cluster", help="cluster name ([cluster])")
    flags.add_argument("--queue-url", help="SQS FIFO queue URL ([sqs] queue_url)")
    flags.add_argument("--checkpoint", type=Path, metavar="PATH",
                       help='checkpoint file ([checkpoint] store = "file", path)')
    flags.add_argument("--group-by", metavar="STRATEGY",
                       help="message group strategy: prefix:N, parent, path, single "
                            "([packing] group_by)")
    flags.add_argument("--max-message-bytes", type=int, metavar="N",
                       help="([packing] max_message_bytes)")
    flags.add_argument("--linger-ms", type=int, metavar="MS",
                       help="([packing] replay_linger_ms: a replay's linger)")
    flags.add_argument("--compress", action=argparse.BooleanOptionalAction, default=None,
                       help="([packing] compress)")
    parser.add_argument("--dry-run", action="store_true",
                        help="translate, filter, pack and encode, but send nothing and save no "
                             "checkpoint (measures the agent's own cost)")


def overrides_from(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {
        "cluster": args.cluster,
        "sqs.queue_url": args.queue_url,
        "packing.group_by": args.group_by,
        "packing.max_message_bytes": args.max_message_bytes,
        "packing.replay_linger_ms": args.linger_ms,
        "packing.compress": args.compress,
    }
    if args.checkpoint is not None:
        overrides["checkpoint.store"] = "file"
        # Relative to where the command runs, as a user expects of a flag.
        overrides["checkpoint.path"] = str(args.checkpoint.resolve())
    return overrides


def run(args: argparse.Namespace) -> int:
    _configure_logging()
    try:
        config = load_config(args.config, overrides_from(args))
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    _install_signal_handlers(stop)
    try:
        return replay(config, args.edits, stop=stop, dry_run=args.dry_run)
    except PermanentSendError as exc:
        log.error("stopped: %s", exc)
    except EditLogError as exc:
        log.error("stopped at a bad edit log record (events before it were shipped and "
                  "checkpointed): %s", exc)
    except CheckpointError as exc:
        log.error("stopped: %s", exc)
    except MessageTooLarge as exc:  # one event over 1 MiB: it cannot be split, nor dropped
        log.error("stopped: %s", exc)
    except BotoCoreError as exc:  # e.g. no region: before anything was sent
        log.error("stopped: AWS: %s (credentials, region and endpoint come from the standard "
                  "AWS chain: AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL)", exc)
    return 1


def replay(config: AgentConfig, files: Sequence[Path], *, stop: threading.Event,
           dry_run: bool = False, sender: Sender | None = None) -> int:
    store: CheckpointStore = open_checkpoint_store(config)
    if dry_run:
        store = _ReadOnlyStore(store)
        sender = NoopSender()
    elif sender is None:
        sender = SqsSender.from_config(config)
    progress = ProgressReporter(interval_s=config.progress.interval_ms / 1000)
    pipeline = Pipeline(config, sender=sender, checkpoint=store, progress=progress,
                        linger_ms=config.packing.replay_linger_ms)
    stats = TranslationStats()
    started = time.monotonic()
    log.info("replaying %d edit log file(s) for cluster %s to %s, after txid %s",
             len(files), config.cluster, "nowhere (dry run)" if dry_run else config.sqs.queue_url,
             pipeline.resume_after if pipeline.resume_after is not None else "- (from the start)")
    result = pipeline.run(
        chunked(_batches(files, config.cluster, pipeline.resume_after, stats)), stop)
    took = time.monotonic() - started
    if stats.unknown_opcodes:
        listed = ", ".join(f"{op} x{n}" for op, n in sorted(stats.unknown_opcodes.items()))
        log.warning("ops this translator does not know yielded no event: %s", listed)
    log.info("%s: %d events read, %d filtered out, %d sent in %d messages (%d billed 64 KiB "
             "requests) in %.1f s; checkpoint txid %s",
             "done" if result.flushed and not stop.is_set() else "stopped", result.events_read,
             result.events_filtered, result.events_sent, result.messages,
             result.billed_requests, took, result.checkpoint_txid)
    return 0


def _batches(files: Sequence[Path], cluster: str, after: int | None,
             stats: TranslationStats) -> Iterator[TxBatch]:
    for path in files:
        for batch in translate_batches(read_ops(path), cluster, source=str(path),
                                       from_txid=after, stats=stats):
            after = batch.txid  # overlapping files: the next one starts after this txid
            yield batch


class _ReadOnlyStore:
    """The real checkpoint to resume from; a dry run never moves it."""

    def __init__(self, store: CheckpointStore) -> None:
        self._store = store

    def load(self) -> int | None:
        return self._store.load()

    def save(self, txid: int) -> None:
        return None


def _install_signal_handlers(stop: threading.Event) -> None:
    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            log.warning("second %s: exiting now; unacknowledged events are re-sent on restart",
                        signal.Signals(signum).name)
            os._exit(1)
        log.info("%s: sealing open messages, waiting for SQS, saving the checkpoint",
                 signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("botocore").setLevel(logging.WARNING)
