"""How a test session's Spark JVMs start: C1 only, the test defaults as system properties, and
class-data-sharing archives that `make test` dumps once per checkout.

Every Spark JVM of a session (the test process's own, a Glue entry script's, a bench smoke's)
is two JVMs: spark-class first runs org.apache.spark.launcher.Main to build the command, then
the driver. By process accounting over a full `make test` (2026-11-29), the drivers took 1,242
of the run's 3,820 CPU s; a local session's driver spent ~14 s of CPU before its first tiny
job, most of it loading and verifying ~15,000 classes from Spark's jars. A dynamic CDS archive
(JDK 13+: -XX:ArchiveClassesAtExit, then -XX:SharedArchiveFile) maps those classes already
parsed and verified: the same session took 7 s of CPU and 6 s of wall instead of 15 and 13;
the launchers 0.13 CPU s each instead of 0.46. The archive is a cache of class files, not of
behaviour; Glue's own JVMs and `make bench` start without it.

CDS refuses a class path that holds a non-empty directory, and spark-class puts SPARK_CONF_DIR
first on the driver's: so the test defaults are system properties (`-Dspark.x=y`, which
SparkConf reads as defaults: a session's own settings and a Glue job's still win), not a
spark-defaults.conf. A JVM whose class path or JDK differs from the dump's (a stale archive, the
deployed-Glue runtime's own pyspark path) starts without the archive, silently: -Xlog:cds=off.

    python -m tests.kit.spark_jvm DIR    dumps DIR/driver.jsa and DIR/launcher.jsa (~30 s)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHIVES = REPO / ".make" / "spark-cds"  # `make test` dumps them here (git-ignored)

# C1 only: a test's JVMs run many small jobs on tiny data, so on 2 shared cores C2's compiler
# threads cost more CPU than its code saves. Measured back to back: test_gap_and_snapshot.py
# 92 -> 57 s CPU, test_cli.py (a Glue entry script's own JVM) 48 -> 26 s CPU, a kit
# NameNode's start and 400 ops 12.3 -> 7.8 s CPU (tests/kit/hadoop/edge.py's QUICK_START is
# the same for `hadoop` JVMs).
QUICK_JIT = "-XX:TieredStopAtLevel=1"

# Tests run hundreds of queries over a few rows each, where compiling code costs more than it
# saves: whole-stage code generation off, expressions interpreted (Spark's own fallback path),
# and no adaptive re-planning between stages. The results are the same; only the plans'
# execution differs. Four rollup tests back to back on a loaded 2-core machine: 210-226 s ->
# 141-161 s. Python workers come from our daemon: pyspark's, without re-reading unchanged zip
# archives before every task (~32 ms each on Python 3.11; tests/kit/pyspark_daemon.py says
# why); the repository on the workers' PYTHONPATH lets them import it whatever directory the
# JVM runs in.
TEST_DEFAULTS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.python.daemon.module": "tests.kit.pyspark_daemon",
    "spark.executorEnv.PYTHONPATH": str(REPO),
}

_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # a refused archive is no error


def submit_opts(archives: Path = ARCHIVES) -> str:
    """SPARK_SUBMIT_OPTS: what spark-submit puts on every driver JVM it launches."""
    return _driver_opts(_sharing(archives / "driver.jsa"))


def launcher_opts(archives: Path = ARCHIVES) -> str:
    """SPARK_LAUNCHER_OPTS: what spark-class puts on the launcher JVM that builds the command."""
    return _launcher_opts(_sharing(archives / "launcher.jsa"))


def _driver_opts(cds: tuple[str, ...]) -> str:
    return " ".join([QUICK_JIT, *cds, *(f"-D{k}={v}" for k, v in TEST_DEFAULTS.items())])


def _launcher_opts(cds: tuple[str, ...]) -> str:
    return " ".join([QUICK_JIT, *cds])


def _sharing(archive: Path) -> tuple[str, ...]:
    # Without `make test`'s dump (a bare pytest run), the JVMs start as they would anyway.
    return (f"-XX:SharedArchiveFile={archive}", *_QUIET) if archive.is_file() else ()


def dump(archives: Path) -> None:
    """Runs a small job of the kinds the tests run (JSON in, zstd Parquet partitioned out,
    window, join, Python UDF, SQL) in a JVM that writes the classes it loaded at exit."""
    archives = archives.resolve()  # the JVMs run elsewhere
    archives.mkdir(parents=True, exist_ok=True)
    for stale in archives.glob("*.jsa"):
        stale.unlink()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS")}
    env["SPARK_SUBMIT_OPTS"] = _driver_opts(
        (f"-XX:ArchiveClassesAtExit={archives / 'driver.jsa'}", *_QUIET))
    env["SPARK_LAUNCHER_OPTS"] = _launcher_opts(
        (f"-XX:ArchiveClassesAtExit={archives / 'launcher.jsa'}", *_QUIET))
    done = subprocess.run([sys.executable, "-m", "tests.kit.spark_jvm", "--job"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    missing = [n for n in ("driver.jsa", "launcher.jsa") if not (archives / n).is_file()]
    if done.returncode != 0 or missing:
        raise SystemExit(f"tests.kit.spark_jvm: the dump job exited {done.returncode}, "
                         f"{', '.join(missing) or 'no archive'} missing:\n{done.stderr[-3000:]}")


def _job() -> None:
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    with tempfile.TemporaryDirectory() as work:
        lines = Path(work, "in.json")
        lines.write_text("".join(json.dumps({"k": i % 7, "v": i, "s": f"x{i}", "a": [i, i + 1],
                                             "m": {"p": "q"}}) + "\n" for i in range(200)))
        frame = spark.read.json(str(lines))
        frame.write.option("compression", "zstd").partitionBy("k").parquet(f"{work}/pq")
        parquet = spark.read.parquet(f"{work}/pq")
        upper = F.udf(lambda s: s.upper())
        (parquet.withColumn("n", F.row_number().over(Window.partitionBy("k").orderBy("v")))
         .join(frame.select("v", F.col("s").alias("s2")), "v", "left")
         .withColumn("u", upper("s2"))
         .groupBy("k").agg(F.count("*"), F.max("v"), F.collect_list("u")).collect())
        spark.createDataFrame([(1, "a")], "x long, y string").createOrReplaceTempView("t")
        spark.sql("SELECT y, count(*) FROM t GROUP BY y").collect()
    spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kit.spark_jvm",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("archives", type=Path, nargs="?", default=ARCHIVES)
    parser.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.job:
        _job()
    else:
        dump(args.archives)
        print(f"tests.kit.spark_jvm: {', '.join(p.name for p in sorted(args.archives.glob('*.jsa')))}"
              f" in {args.archives}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
