"""`hdfs-events-agent run` from the command line: clear failures, non-zero exits."""

from __future__ import annotations

from onprem_agent.cli import main


def test_run_without_an_hdfs_uri_names_the_key(tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "prod"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    '[checkpoint]\npath = "c.json"\n')
    assert main(["run", "--config", str(path)]) == 1
    assert "agent.toml: [hdfs] uri: required for `run`" in capsys.readouterr().err


def test_run_against_an_unreachable_namenode_exits_non_zero(tmp_path, jvm, monkeypatch,
                                                             capsys):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("HADOOP_CLASSPATH", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "prod"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    '[checkpoint]\npath = "c.json"\n[hdfs]\nuri = "hdfs://127.0.0.1:1"\n'
                    '[metrics]\nprometheus_port = 0\nheartbeat_interval_s = 0\n')
    assert main(["run", "--config", str(path), "--dry-run"]) == 1
    assert "ConnectException" in capsys.readouterr().err
