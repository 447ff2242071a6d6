"""A Hadoop client driving a NameNode as fast as it takes namespace operations: `threads`
threads in one process of its own (its own JVM, the client jars pyspark ships, as the agent
starts it), each looping over files of its own directory for `seconds`.

    python -m tests.kit.hadoop.namenode_load URI CONF_DIR ROOT --threads 4 --seconds 60 \
        --out load.json

Thread i works in ROOT/t<i> (made first: one MKDIR event). Each step of it is four RPCs, each
journalled as one transaction and handed out by inotify as one event: create an empty file
(CREATE) and close it (CLOSE), rename it to `<name>.done` (RENAME), and delete the `.done` file
of `WINDOW` steps before (UNLINK). Empty files need no block, so no DataNode takes part and
the NameNode's own RPC handling and journal sync are what limit the rate; the namespace stays
at WINDOW files a thread, so a check of it at the end is cheap whatever the run's length.
JPype lets go of the GIL in every Java call, so the threads' RPCs are in flight at once.

Writes {"threads", "seconds", "ops": {CREATE, CLOSE, RENAME, UNLINK, MKDIR}, "events",
"started_ms", "ended_ms"} (the JVM's clock, the one the NameNode stamps edits with).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

WINDOW = 50  # `.done` files a thread keeps


def drive(fs: Any, root: str, thread: int, deadline: float, counts: Counter[str],
          lock: threading.Lock) -> None:
    import jpype

    path = jpype.JClass("org.apache.hadoop.fs.Path")
    # JPype picks the varargs rename(a, b, Rename...) for fs.rename(a, b) (OP_RENAME);
    # rename(a, b) is what `hdfs dfs -mv` calls (OP_RENAME_OLD): call it by reflection.
    rename = fs.getClass().getMethod("rename", path, path)
    directory = f"{root}/t{thread}"
    fs.mkdirs(path(directory))
    mine: Counter[str] = Counter(MKDIR=1)
    step = 0
    while time.monotonic() < deadline:
        name = f"{directory}/f{step:09d}"
        fs.create(path(name), False).close()
        if not rename.invoke(fs, path(name), path(name + ".done")):
            raise OSError(f"rename {name} failed")
        mine.update(("CREATE", "CLOSE", "RENAME"))
        if step >= WINDOW:
            if not fs.delete(path(f"{directory}/f{step - WINDOW:09d}.done"), False):
                raise OSError(f"delete of step {step - WINDOW} in {directory} failed")
            mine["UNLINK"] += 1
        step += 1
    with lock:
        counts.update(mine)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri")
    parser.add_argument("conf_dir")
    parser.add_argument("root")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    import jpype

    from onprem_agent.live.hadoop import HadoopClient
    from onprem_agent.live.jvm import resolve_classpath, start_jvm

    start_jvm(resolve_classpath(conf_dir=args.conf_dir), max_heap="256m")
    fs = HadoopClient(args.uri).file_system()
    clock = jpype.JClass("java.lang.System")
    counts: Counter[str] = Counter()
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        try:
            drive(fs, args.root, i, deadline, counts, lock)
        except BaseException as exc:  # reported below, the run fails
            errors.append(exc)

    started_ms = int(clock.currentTimeMillis())
    deadline = time.monotonic() + args.seconds
    threads = [threading.Thread(target=run, args=(i,), name=f"client-{i}")
               for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ended_ms = int(clock.currentTimeMillis())
    if errors:
        print(f"namenode_load: {errors[0]!r}", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps({
        "threads": args.threads, "seconds": (ended_ms - started_ms) / 1000,
        "ops": dict(counts), "events": sum(counts.values()),
        "started_ms": started_ms, "ended_ms": ended_ms}))
    return 0


if __name__ == "__main__":
    code = main()
    # A process that ran a JVM through JPype can abort at exit (FACTS.md): end without
    # Python's finalization once the JSON is written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
