"""`hdfs-events-agent run` from the command line: clear failures, non-zero exits."""

from __future__ import annotations

import logging
import os
import signal
import threading

from onprem_agent.cli import main


def test_run_without_an_hdfs_uri_names_the_key(tmp_path, capsys):
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "prod"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    '[checkpoint]\npath = "c.json"\n')
    assert main(["run", "--config", str(path)]) == 1
    assert "agent.toml: [hdfs] uri: required for `run`" in capsys.readouterr().err


def test_run_against_an_unreachable_namenode_waits_for_it_until_stopped(
        tmp_path, jvm, monkeypatch):
    """A refused connection is what a stopped NameNode gives: `run` says so and waits
    (onprem_agent/live/reconnect.py) instead of exiting for systemd to restart it; `doctor`
    says the same (test_doctor.py). SIGTERM still ends it cleanly."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("HADOOP_CLASSPATH", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    path = tmp_path / "agent.toml"
    path.write_text('cluster = "prod"\n[sqs]\nqueue_url = "https://x/q.fifo"\n'
                    '[checkpoint]\npath = "c.json"\n[hdfs]\nuri = "hdfs://127.0.0.1:1"\n'
                    'reconnect_max_s = 1\n'
                    '[metrics]\nprometheus_port = 0\nheartbeat_interval_s = 0\n')
    waits: list[str] = []

    class StopOnSecondWait(logging.Handler):  # then SIGTERM, as `systemctl stop` sends it
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("NameNode hdfs://127.0.0.1:1 unavailable for "):
                waits.append(record.getMessage())
                if len(waits) == 2:
                    os.kill(os.getpid(), signal.SIGTERM)

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    stream_log = logging.getLogger("onprem_agent.live.stream")
    watcher = StopOnSecondWait()
    stream_log.addHandler(watcher)
    # Only a hang ends here: the agent would otherwise wait for the NameNode forever.
    backstop = threading.Timer(120, os.kill, (os.getpid(), signal.SIGTERM))
    backstop.start()
    try:
        code = main(["run", "--config", str(path), "--dry-run"])
    finally:
        backstop.cancel()
        stream_log.removeHandler(watcher)
        for sig, handler in handlers.items():  # run() installed its own
            signal.signal(sig, handler)
    assert code == 0
    assert len(waits) == 2  # it waited, tried again, and waited again; never exited
    assert "(ConnectException: Call From " in waits[0]
    assert waits[0].endswith("last txid shipped <none>, reading resumes after the current txid")
