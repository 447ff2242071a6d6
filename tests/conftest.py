"""Fixtures every test area shares: the bundled real edit log, and AWS through moto.

Unit tests use moto in-process (`mock_aws`); integration and e2e tests reach a real HTTP moto
server on 127.0.0.1 through the standard AWS_ENDPOINT_URL variable, as a deployment reaches AWS.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit.sample_edits import SAMPLE_EDITS
from tests.kit.spark_jvm import QUICK_JIT, launcher_opts, submit_opts

# Never let a test reach a real account: fake credentials, a fixed region, no profile files.
_FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


@pytest.fixture(scope="session", autouse=True)
def fake_aws_credentials() -> Iterator[None]:
    # pytest's MonkeyPatch as a context: the session's environment restored at its end.
    with pytest.MonkeyPatch.context() as env:
        env.delenv("AWS_PROFILE", raising=False)
        for key, value in _FAKE_AWS.items():
            env.setenv(key, value)
        yield


# The one Spark JVM of the test process serves every module that uses Spark, so what each
# leaves behind adds up: with 1 GiB and Spark's default 1,000 SQL executions kept for its status
# store (each with its plan graph; the rollups' plans are large), a full run's JVM spent ~1,200
# full GCs at an old generation 99.9 % full by the rollup tests (jstat), minutes per test.
SPARK_TEST_JVM = "--driver-memory 3g --conf spark.sql.ui.retainedExecutions=20"


@pytest.fixture(scope="session", autouse=True)
def spark_jvm_opens_s3a() -> Iterator[None]:
    """Every Spark JVM this test process launches carries the S3A jars and the jobs' own jar
    (glue_jobs.runtime.job_jar).

    PySpark launches one JVM per process and reuses it for every later SparkSession, and jars
    join the driver's classpath only at launch: a module whose session needs no S3A (a local
    lake) must not leave a JVM that a later module's s3a:// session cannot use. Which module
    comes first must not matter: a subset run, or modules spread over `make test`'s two
    pytest-xdist workers (pytest_xdist_make_scheduler, below).
    """
    from glue_jobs.runtime import JobJarMissing, S3AJarsMissing, job_jar, s3a_jars

    with pytest.MonkeyPatch.context() as env:
        # On every driver and launcher JVM spark-submit starts, so the processes a test starts
        # inherit them (Glue entry scripts, bench smokes) whatever PYSPARK_SUBMIT_ARGS they are
        # given: C1 only, the test defaults, the class-data-sharing archives (tests/kit/spark_jvm.py).
        env.setenv("SPARK_SUBMIT_OPTS", submit_opts())
        env.setenv("SPARK_LAUNCHER_OPTS", launcher_opts())
        env.delenv("SPARK_CONF_DIR", raising=False)
        # Without `make hadoop` or `make glue-jar` a jar is missing: the tests that need it say so.
        jars: list[str] = []
        with contextlib.suppress(JobJarMissing):
            jars.append(job_jar())
        with contextlib.suppress(S3AJarsMissing):
            jars += s3a_jars()
        if jars:
            env.setenv("PYSPARK_SUBMIT_ARGS",
                       f"{SPARK_TEST_JVM} --jars {','.join(jars)} pyspark-shell")
        yield


@pytest.fixture(scope="session", autouse=True)
def py4j_names_resolved_once() -> Iterator[None]:
    """The test process's pyspark asks its JVM what a name is once (tests/kit/py4j_names.py)."""
    from tests.kit.py4j_names import resolved_once

    with resolved_once():
        yield


@pytest.fixture(scope="session", autouse=True)
def hadoop_jvms_quick_jit() -> Iterator[None]:
    """The kit's NameNode processes (tests/kit/hadoop/host.py) and every agent JVM of this
    session (HADOOP_CLIENT_OPTS, which the agent takes as Hadoop's client commands do) run C1
    only: a test's agent lives seconds. By process accounting over a full run, 76 agent
    processes took 480 CPU s, the third largest kind after Spark and the workers; with C1
    test_kerberos.py took 72 CPU s against 99, back to back."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HDFS_KIT_JAVA_OPTIONS", QUICK_JIT)
        env.setenv("HADOOP_CLIENT_OPTS", QUICK_JIT)
        yield


@pytest.fixture(scope="session", autouse=True)
def botocore_data_parsed_once() -> Iterator[None]:
    """Every botocore session of the run reads AWS's model files through one loader.

    moto's `mock_aws` gives each test a fresh boto3 default session (so no client or credential
    outlives its test), and each new session parses botocore's JSON again with a loader of its
    own: endpoints.json, partitions and every service's model and rule set, ~0.3-0.9 s a test
    on these cores (cProfile: most of a unit test's setup). The files are the same for the whole
    run; the loader caches what it parsed and clients only read it (clients of one session
    already share it). Sessions, credentials, clients and event handlers stay per test.
    """
    import botocore.loaders
    import botocore.session

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader",
                      functools.cache(botocore.loaders.create_loader))
        yield


@pytest.fixture(scope="session")
def edits_sample() -> Path:
    return SAMPLE_EDITS


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A moto server on 127.0.0.1 (free port) for the whole session; yields its endpoint URL.

    Tests that use it should call `moto_endpoint` (function scope) to get the endpoint set in
    AWS_ENDPOINT_URL and a clean state.
    """
    from moto.server import ThreadedMotoServer

    from tests.kit import moto_fixes

    moto_fixes.apply()  # moto can lose DynamoDB writes and SQS messages under concurrency
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def moto_endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """AWS_ENDPOINT_URL pointed at the moto server, with its state reset before the test."""
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset",
                                                  method="POST"), timeout=30).read()
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    return moto_server


@pytest.fixture(scope="session")
def jvm() -> object:
    """The agent's JVM in this test process (JPype starts one per process, never restarts it),
    with the Hadoop client jars inside pyspark: the resolution the agent uses when Hadoop is
    not installed."""
    from onprem_agent.live.jvm import resolve_classpath, start_jvm

    env = {k: v for k, v in os.environ.items()
           if k not in ("HADOOP_CLASSPATH", "HADOOP_CONF_DIR")}
    env["PATH"] = "/nonexistent"  # no `hadoop` script: take pyspark's jars
    start_jvm(resolve_classpath(env=env))
    import jpype

    return jpype


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`make test` on both cores (pytest-xdist, `-n 2`): a module runs whole on one worker, so
    its NameNode or Spark job starts once, and the e2e modules run on one worker together: they
    share one chain per session, on moto's in-process backends that another module's `mock_aws`
    resets. Measured quiet (2026-11-27): 1,087 s on two workers against 1,512 s serially; one
    test process leaves a core idle about half the time (a JVM starting, a NameNode restarting,
    a ticket expiring, a queue's visibility timeout)."""
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndTheChain(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/e2e" if nodeid.startswith("tests/e2e/") else super()._split_scope(nodeid)

    return ModulesAndTheChain(config, log)
