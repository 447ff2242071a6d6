"""The JVM the agent reads HDFS through: which jars, which cluster config, started once.

Classpath, first that applies:
1. `hdfs.classpath` in the config (an explicit list, for unusual installs);
2. `hadoop classpath --glob` when a Hadoop client is installed on the edge node (it already
   includes HADOOP_CLASSPATH and the distribution's own conf dir);
3. HADOOP_CLASSPATH alone (globs expanded), when the `hadoop` script is absent;
4. the Hadoop client jars that ship inside pyspark (hadoop-client-api/runtime, shaded, with
   every inotify class), plus the logging jars they need.
HADOOP_CONF_DIR (or `hdfs.conf_dir`) goes first on the classpath: Configuration loads
core-site.xml and hdfs-site.xml from the classpath, which is how `hdfs://<nameservice>` URIs of an
HA cluster resolve to their NameNodes.

JPype runs the JVM inside this process (JNI, ~1.7 us a call against py4j's ~110 us over a
socket) and can start it only once per process: `start_jvm` is idempotent and refuses a second,
different classpath instead of silently keeping the first.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# pyspark's bundled Hadoop client plus what its logging needs (slf4j -> log4j2).
_PYSPARK_JAR_PATTERNS = (
    "hadoop-client-api-*.jar",
    "hadoop-client-runtime-*.jar",
    "slf4j-api-*.jar",
    "log4j-slf4j2-impl-*.jar",
    "log4j-api-*.jar",
    "log4j-core-*.jar",
    "commons-logging-*.jar",
)
_HADOOP_CLASSPATH_TIMEOUT_S = 60


class JvmError(RuntimeError):
    """The JVM or the Hadoop classpath cannot be set up; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Classpath:
    entries: tuple[str, ...]
    source: str  # where it came from, for `doctor` and the start-up log line

    def describe(self) -> str:
        return f"{len(self.entries)} entries from {self.source}"


def pyspark_jars_dir() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return jars if jars.is_dir() else None


def resolve_classpath(
    *,
    explicit: Sequence[str] = (),
    conf_dir: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Classpath:
    env = os.environ if env is None else env
    conf = conf_dir or env.get("HADOOP_CONF_DIR") or None
    head = (conf,) if conf else ()
    if explicit:
        return Classpath(head + _expand(explicit), "hdfs.classpath in the config")
    hadoop = shutil.which("hadoop", path=env.get("PATH"))
    if hadoop:
        try:
            out = subprocess.run([hadoop, "classpath", "--glob"], capture_output=True,
                                 text=True, check=True, timeout=_HADOOP_CLASSPATH_TIMEOUT_S,
                                 env=dict(env)).stdout
        except (subprocess.SubprocessError, OSError) as exc:
            raise JvmError(f"`{hadoop} classpath --glob` failed ({exc}); fix the Hadoop "
                           "install or set hdfs.classpath in the config") from exc
        return Classpath(head + _split(out.strip()), f"`{hadoop} classpath --glob`")
    if env.get("HADOOP_CLASSPATH"):
        return Classpath(head + _expand(_split(env["HADOOP_CLASSPATH"])), "HADOOP_CLASSPATH")
    jars = pyspark_jars_dir()
    if jars is None:
        raise JvmError("no Hadoop client found: install Hadoop (so `hadoop classpath` works), "
                       "set HADOOP_CLASSPATH, or install pyspark, whose jars include the client")
    found: list[str] = []
    for pattern in _PYSPARK_JAR_PATTERNS:
        matches = sorted(glob.glob(str(jars / pattern)))
        if not matches and pattern.startswith("hadoop-client"):
            raise JvmError(f"{jars} has no {pattern}: reinstall pyspark or set HADOOP_CLASSPATH")
        found.extend(matches)
    return Classpath(head + tuple(found), f"pyspark's jars ({jars})")


def _split(value: str) -> tuple[str, ...]:
    return tuple(p for p in value.split(os.pathsep) if p)


def _expand(entries: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for entry in entries:
        if entry.endswith("*"):  # Java's dir/* means every jar in dir
            out.extend(sorted(glob.glob(entry + ".jar")) or [entry])
        elif any(c in entry for c in "?["):
            out.extend(sorted(glob.glob(entry)))
        else:
            out.append(entry)
    return tuple(out)


_started: Classpath | None = None


def krb5_conf_flags(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """KRB5_CONFIG (MIT Kerberos's variable for a krb5.conf elsewhere than /etc/krb5.conf) as
    the system property Java reads instead: Java itself ignores KRB5_CONFIG."""
    env = os.environ if env is None else env
    path = env.get("KRB5_CONFIG")
    if not path:
        return ()
    if not Path(path).is_file():
        raise JvmError(f"KRB5_CONFIG={path}: no such file -> point it at the cluster's "
                       "krb5.conf or unset it (then Java reads /etc/krb5.conf)")
    return (f"-Djava.security.krb5.conf={path}",)


def client_opts_flags(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """HADOOP_CLIENT_OPTS, the JVM options Hadoop's own scripts give every client command
    (`hdfs dfs`, `hdfs dfsadmin`), split as a shell would: the agent is an HDFS client, so an
    operator's `-Xmx2g`, GC logging or `-Dsun.security.krb5.debug=true` in the environment file
    reaches its JVM the same way. They go after the agent's own options: the JVM takes the last
    of a repeated option, so the operator's win."""
    env = os.environ if env is None else env
    try:
        return tuple(shlex.split(env.get("HADOOP_CLIENT_OPTS", "")))
    except ValueError as exc:
        raise JvmError(f"HADOOP_CLIENT_OPTS: {exc} -> quote it as a shell would, or unset it") \
            from None


def start_jvm(classpath: Classpath, *, max_heap: str = "512m") -> None:
    """Starts the in-process JVM once; a later call with the same classpath is a no-op."""
    global _started
    import jpype

    if jpype.isJVMStarted():
        if _started is not None and _started.entries != classpath.entries:
            raise JvmError("the JVM is already running with another classpath "
                           f"({_started.source}); JPype cannot restart it in one process")
        return
    import jpype.config

    # Tearing the JVM down at interpreter exit can crash the process (a segfault after all work
    # is done, seen here at the end of a test session) while Hadoop's IPC and lease threads are
    # still alive. The process is ending anyway: let it end without destroying the JVM.
    jpype.config.destroy_jvm = False
    krb5, client_opts = krb5_conf_flags(), client_opts_flags()
    try:
        jpype.startJVM(
            f"-Xmx{max_heap}",
            # The serial collector from a 32 MiB heap: the heap grows only by what stays live (a
            # listing page, Hadoop's client state), so the process's peak follows its work, not
            # the collector's mood. With G1 (the default on 2+ CPUs) the young generation is sized
            # by pause goals up to the cap: first start of 100k files peaked at 216-337 MiB run to
            # run; serial gave 200-206 MiB at 100k and 195 MiB at 300k in the same runs, at the
            # same speed (docs/bench.md, "First start and verify at scale"). The JVM picks the
            # serial collector itself on small machines; the agent's pauses are milliseconds.
            "-XX:+UseSerialGC",
            "-Xms32m",
            # The JVM must not take SIGTERM/SIGINT from Python: by default it installs its own
            # handlers and exits on them, so `systemctl stop` killed the JVM under the
            # pipeline instead of letting it flush and save its checkpoint (found against a
            # real NameNode: the agent exited 143 with "JVM is not running").
            "-Xrs",
            # Hadoop logs through slf4j -> log4j2; with no log4j2 config log4j prints a status
            # warning on every start. Errors still reach stderr.
            "-Dlog4j2.statusLoggerLevel=OFF",
            "-Dlog4j2.level=WARN",
            *krb5,
            *client_opts,
            classpath=list(classpath.entries),
            # Hadoop strings come back as Python str: one call fewer per field.
            convertStrings=True,
        )
    except (OSError, RuntimeError) as exc:
        raise JvmError(f"cannot start the JVM ({exc}): install a Java 8+ runtime or set "
                       "JAVA_HOME") from exc
    _started = classpath


def jvm_classpath() -> Classpath | None:
    return _started


def java_version() -> str:
    import jpype

    return str(jpype.JClass("java.lang.System").getProperty("java.version"))
