"""The settings our Spark jobs' JVMs start with, on Glue and in every local job session.

Pure values: the CDK app reads them for the jobs' --conf argument (stacks/lake_jobs.py), the
local sessions through glue_jobs.runtime.job_conf, so a job runs locally as it is deployed.
"""

from __future__ import annotations

# The collector of our jobs' JVMs: Parallel, where the JVM picks G1 on two CPUs or more. A batch
# job has no pause goal for G1 to serve, and under G1 every stage of the compaction cost ~1.5x
# the task CPU: bench.compact at 10.5M rows on local[2], same input, Spark's event log, executor
# CPU 220 s under G1 against 143 s under Parallel, 162 s against 103 s wall (docs/glue.md). Not
# G1's region size: with 32 MiB regions (no humongous arrays) it still took 150 s. On Glue the
# jobs' --conf argument carries the same settings (glue_conf_argument).
JVM_SETTINGS = {"spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
                "spark.executor.extraJavaOptions": "-XX:+UseParallelGC"}


def glue_conf_argument() -> str:
    """JVM_SETTINGS as the value of a Glue job's --conf argument, which Glue hands to
    spark-submit when it starts the job's JVMs: a key=value pair, the next ones each after
    " --conf "."""
    return " --conf ".join(f"{key}={value}" for key, value in JVM_SETTINGS.items())
