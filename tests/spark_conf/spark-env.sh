# Sourced by spark-class when it launches a test session's Spark JVM (SPARK_CONF_DIR is this
# directory). The JVM's Python workers get PYTHONPATH from this environment: the repository on
# it lets them import the daemon spark-defaults.conf names (tests/kit/pyspark_daemon.py)
# whatever directory the JVM runs in.
PYTHONPATH="$(cd "$SPARK_CONF_DIR/../.." && pwd)${PYTHONPATH:+:$PYTHONPATH}"
