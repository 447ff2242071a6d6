"""A local job session's JVM starts as Glue starts the jobs' JVMs (glue_jobs/jvm_settings.py)."""

from __future__ import annotations


def test_the_session_jvm_collects_garbage_with_the_collector_the_jobs_are_deployed_with(
        spark) -> None:
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    collectors = {bean.getName() for bean in management.getGarbageCollectorMXBeans()}
    # The Parallel collector's two beans; G1, the JVM's own pick here, names "G1 Young
    # Generation" and "G1 Old Generation".
    assert collectors == {"PS Scavenge", "PS MarkSweep"}
