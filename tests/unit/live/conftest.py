"""One JVM for every live test: JPype can start a JVM only once per process, never restart it.

Tests that need Java ask for `jvm`; it starts the JVM with the Hadoop client jars inside pyspark
(the same resolution the agent uses when Hadoop is not installed) on first use.
"""

from __future__ import annotations

import os

import pytest

from onprem_agent.live.convert import InotifyMessages, load_inotify_messages
from onprem_agent.live.jvm import resolve_classpath, start_jvm


@pytest.fixture(scope="session")
def jvm() -> object:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HADOOP_CLASSPATH", "HADOOP_CONF_DIR")}
    env["PATH"] = "/nonexistent"  # no `hadoop` script: take pyspark's jars
    start_jvm(resolve_classpath(env=env))
    import jpype

    return jpype


@pytest.fixture(scope="session")
def inotify_messages(jvm: object) -> InotifyMessages:
    return load_inotify_messages()
