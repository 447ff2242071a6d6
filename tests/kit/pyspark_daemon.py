"""pyspark's worker daemon for the Spark JVMs of a test session (tests/kit/spark_jvm.py names it
in spark.python.daemon.module), with one change: a zip archive on the workers' path is read again
only when it changed.

pyspark 3.5's worker calls importlib.invalidate_caches() before every task, and on Python 3.11
that makes each zipimporter re-read its archive's directory in pure Python (CPython gh-103200,
fixed in 3.12 only). A worker's path holds pyspark.zip, py4j's zip and spark-core's jar (5,221
entries): ~32 ms of CPU per task, which a test's hundreds of small Python tasks (createDataFrame,
the compaction's UDFs) turned into a third of test_activity_rollups' CPU (py-spy). An archive
whose size and mtime are unchanged has nothing new to read. Glue's own workers are untouched.
"""

from __future__ import annotations

import os
import zipimport

from pyspark.daemon import manager

_read_directory_again = zipimport.zipimporter.invalidate_caches
_read_at: dict[str, tuple[int, int]] = {}  # archive -> (mtime ns, size) when last read


def _invalidate_if_changed(importer: zipimport.zipimporter) -> None:
    try:
        stat = os.stat(importer.archive)
    except OSError:  # gone: let zipimport forget it
        _read_at.pop(importer.archive, None)
        _read_directory_again(importer)
        return
    stamp = (stat.st_mtime_ns, stat.st_size)
    if _read_at.get(importer.archive) != stamp:
        _read_directory_again(importer)
        _read_at[importer.archive] = stamp


zipimport.zipimporter.invalidate_caches = _invalidate_if_changed  # type: ignore[method-assign]

if __name__ == "__main__":
    manager()
