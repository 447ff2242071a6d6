"""KRB5_CONFIG, MIT Kerberos's variable, reaches the agent's JVM as java.security.krb5.conf."""

from __future__ import annotations

import pytest

from onprem_agent.live.jvm import JvmError, krb5_conf_flags


def test_krb5_config_becomes_the_jvm_property(tmp_path):
    conf = tmp_path / "krb5.conf"
    conf.write_text("[libdefaults]\n  default_realm = EXAMPLE.COM\n")
    assert krb5_conf_flags({"KRB5_CONFIG": str(conf)}) == (f"-Djava.security.krb5.conf={conf}",)


def test_without_krb5_config_java_reads_its_default():
    assert krb5_conf_flags({}) == ()


def test_a_krb5_config_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(JvmError, match=f"KRB5_CONFIG={tmp_path}/nope.conf: no such file"):
        krb5_conf_flags({"KRB5_CONFIG": str(tmp_path / "nope.conf")})
