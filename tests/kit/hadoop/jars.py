"""Where `make hadoop` puts Hadoop's jars, and the JVM flags they need on Java 17."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LIB = REPO / ".hadoop" / "lib"
KIT_JAR = LIB / "hdfs-events-hadoop-kit.jar"
# An edge node's client for DistCp and S3A (pom.xml, execution distcp-client): its own JVM.
DISTCP_LIB = REPO / ".hadoop" / "distcp"

# Hadoop 3.3 predates Java 17's strong encapsulation; these are the module openings Hadoop's
# and Spark's own launch scripts pass (reflection into java.lang, nio buffers, Kerberos).
JAVA17_OPENS = tuple(
    f"--add-opens={module}/{package}=ALL-UNNAMED" for module, package in (
        ("java.base", "java.lang"), ("java.base", "java.lang.reflect"),
        ("java.base", "java.io"), ("java.base", "java.net"), ("java.base", "java.nio"),
        ("java.base", "java.util"), ("java.base", "java.util.concurrent"),
        ("java.base", "sun.nio.ch"), ("java.base", "sun.security.action"),
        ("java.security.jgss", "sun.security.krb5"),
    ))


class HadoopJarsMissing(RuntimeError):
    pass


def jars() -> list[str]:
    found = sorted(glob.glob(str(LIB / "*.jar")))
    if not any("hadoop-client-minicluster" in j for j in found) or not KIT_JAR.exists():
        raise HadoopJarsMissing(f"Hadoop's jars are not in {LIB}: run `make hadoop`")
    return found


def distcp_jars() -> list[str]:
    found = sorted(glob.glob(str(DISTCP_LIB / "*.jar")))
    if not any("hadoop-distcp" in j for j in found) or not any("hadoop-aws" in j for j in found):
        raise HadoopJarsMissing(f"DistCp and S3A jars are not in {DISTCP_LIB}: run `make hadoop`")
    return found


def java() -> str:
    path = shutil.which("java")
    if path is None:
        raise HadoopJarsMissing("java not found: install a Java 17 runtime")
    return path
