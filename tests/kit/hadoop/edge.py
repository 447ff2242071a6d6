"""An edge node's Hadoop client, for the copy worker's tests and bench: a `hadoop` command whose
`distcp` and `fs` subcommands run Hadoop's own DistCp and FsShell, and the conf dir it reads.

    conf = write_edge_conf(hdfs.conf_dir, tmp / "edge-conf", s3_endpoint=moto, region=...)
    hadoop = write_hadoop_launcher(tmp / "bin", conf)     # put tmp/bin first on PATH

`hadoop distcp ARGS` execs `java -cp CONF:.hadoop/distcp/* org.apache.hadoop.tools.DistCp ARGS`:
the class Hadoop's own `hadoop distcp` script runs, with the MapReduce LocalJobRunner (what
`mapreduce.framework.name=local` selects), so the copy is Hadoop's real DistCp writing through
the NameNode and DataNode, reading S3 through S3A. Only the launcher is ours: the real script
also sets up YARN, native libraries and HADOOP_OPTS, none of which a local job needs. The
launcher execs (same pid, no shell between), so a SIGKILL to the pid it records stops DistCp.

The jars (.hadoop/distcp, `make hadoop`) are the shaded client-api/runtime plus hadoop-distcp,
hadoop-aws and its AWS SDK bundle: a JVM of their own, never the NameNode's (see pom.xml).
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from tests.kit.hadoop.jars import DISTCP_LIB, distcp_jars, java

# S3A against an S3-compatible endpoint (moto server here): the endpoint and its region,
# path-style requests (moto serves no virtual-host buckets on 127.0.0.1), plain HTTP, and the
# credentials pinned to the standard AWS environment variables. Without the pin S3A's default
# chain ends in the EC2 instance-metadata provider, which probes 169.254.169.254.
ENV_CREDENTIALS = "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"

_LOG4J = """\
# The `hadoop` client's log (stderr, which the copy worker keeps the tail of): DistCp's own
# progress lines, warnings from the rest.
log4j.rootLogger=WARN, stderr
log4j.logger.org.apache.hadoop.tools=INFO
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.metrics2=ERROR
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n
"""

_LAUNCHER = '''
"""`hadoop` on an edge node, for tests: distcp and fs run Hadoop's own classes (tests/kit/hadoop/edge.py)."""
import json
import os
import sys

MAINS = {"distcp": "org.apache.hadoop.tools.DistCp", "fs": "org.apache.hadoop.fs.FsShell"}

if len(sys.argv) < 2 or sys.argv[1] not in MAINS:
    print(f"hadoop (test kit): supported commands: {', '.join(MAINS)}", file=sys.stderr)
    sys.exit(2)
if LOG:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "pid": os.getpid()}) + "\\n")
os.execv(JAVA, [JAVA, *JAVA_OPTIONS, "-cp", CLASSPATH, MAINS[sys.argv[1]], *sys.argv[2:]])
'''


def write_edge_conf(cluster_conf_dir: Path, out: Path, *, s3_endpoint: str, region: str,
                    extra: Mapping[str, str] | None = None) -> Path:
    """The conf dir an edge node's client reads: the cluster's client settings, S3A's, and a
    local MapReduce runner whose staging and scratch space stay under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    core = _properties(cluster_conf_dir / "core-site.xml")
    core.update({
        "fs.s3a.endpoint": s3_endpoint,
        "fs.s3a.endpoint.region": region,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": ENV_CREDENTIALS,
        "hadoop.tmp.dir": str(out / "tmp"),
        **(extra or {}),
    })
    _write(out / "core-site.xml", core)
    hdfs = _properties(cluster_conf_dir / "hdfs-site.xml")
    hdfs["dfs.replication"] = "1"  # the kit's cluster has one DataNode
    _write(out / "hdfs-site.xml", hdfs)
    _write(out / "mapred-site.xml", {
        "mapreduce.framework.name": "local",
        "mapreduce.jobtracker.staging.root.dir": str(out / "tmp" / "staging"),
    })
    (out / "log4j.properties").write_text(_LOG4J)
    return out


# For tests: each `hadoop` call is a short JVM on 2 shared cores, where the C2 compiler costs
# more CPU than it saves (measured: a small DistCp run takes half the CPU time with C1 only).
QUICK_START = ("-XX:TieredStopAtLevel=1",)


def write_hadoop_launcher(bin_dir: Path, conf_dir: Path, *, log: Path | None = None,
                          java_options: tuple[str, ...] = ()) -> Path:
    """Writes `bin_dir/hadoop`; with `log`, each invocation's argv and pid are appended to it
    as a JSON line before the JVM starts (the tests' record of what the worker ran)."""
    distcp_jars()  # a clear error now when `make hadoop` has not run
    bin_dir.mkdir(parents=True, exist_ok=True)
    classpath = os.pathsep.join([str(conf_dir), str(DISTCP_LIB / "*")])
    header = (f"#!{sys.executable}\n"
              f"JAVA = {java()!r}\nCLASSPATH = {classpath!r}\n"
              f"JAVA_OPTIONS = {('-Xmx512m', '-XX:+UseSerialGC', *java_options)!r}\n"
              f"LOG = {str(log) if log else ''!r}\n")
    launcher = bin_dir / "hadoop"
    launcher.write_text(header + _LAUNCHER)
    launcher.chmod(0o755)
    return launcher


def _properties(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return {p.findtext("name", ""): p.findtext("value", "")
            for p in ET.parse(path).getroot().iter("property")}


def _write(path: Path, values: Mapping[str, str]) -> None:
    props = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value>"
                    "</property>\n" for k, v in sorted(values.items()))
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{props}</configuration>\n')

