"""What the environment adds to the agent's JVM: KRB5_CONFIG (MIT Kerberos's variable) as
java.security.krb5.conf, and HADOOP_CLIENT_OPTS (Hadoop's own for client commands) after the
agent's options."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from onprem_agent.live.jvm import JvmError, client_opts_flags, krb5_conf_flags


def test_krb5_config_becomes_the_jvm_property(tmp_path):
    conf = tmp_path / "krb5.conf"
    conf.write_text("[libdefaults]\n  default_realm = EXAMPLE.COM\n")
    assert krb5_conf_flags({"KRB5_CONFIG": str(conf)}) == (f"-Djava.security.krb5.conf={conf}",)


def test_without_krb5_config_java_reads_its_default():
    assert krb5_conf_flags({}) == ()


def test_a_krb5_config_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(JvmError, match=f"KRB5_CONFIG={tmp_path}/nope.conf: no such file"):
        krb5_conf_flags({"KRB5_CONFIG": str(tmp_path / "nope.conf")})


def test_hadoop_client_opts_reach_the_started_jvm_and_win_over_the_agents_own():
    # Its own process: JPype starts one JVM per process, and this one's may be running.
    probe = (
        "import json, jpype\n"
        "from onprem_agent.live.jvm import resolve_classpath, start_jvm\n"
        "start_jvm(resolve_classpath(env={'PATH': '/nonexistent'}), max_heap='512m')\n"
        "system = jpype.JClass('java.lang.System')\n"
        "print(json.dumps([str(system.getProperty('hdfs.events.probe')),\n"
        "                  int(jpype.JClass('java.lang.Runtime').getRuntime().maxMemory())]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin",
                               "HADOOP_CLIENT_OPTS": "-Dhdfs.events.probe='two words' -Xmx256m"},
                          check=True, timeout=120)
    prop, max_heap = json.loads(done.stdout.strip().splitlines()[-1])
    assert prop == "two words"
    assert max_heap <= 256 * 1024 * 1024  # the agent's own -Xmx512m came first


def test_hadoop_client_opts_unset_add_nothing_and_bad_quoting_is_named():
    assert client_opts_flags({}) == ()
    with pytest.raises(JvmError, match="HADOOP_CLIENT_OPTS: No closing quotation"):
        client_opts_flags({"HADOOP_CLIENT_OPTS": "-Dx='open"})
