"""Progress output: a line refreshed in place on a terminal, log lines otherwise."""

from __future__ import annotations

import io
import logging

import pytest

from onprem_agent.progress import ProgressReporter, ProgressSnapshot


def snap(sent: int, elapsed: float) -> ProgressSnapshot:
    return ProgressSnapshot(events_read=sent + 5, events_filtered=5, events_sent=sent,
                            messages=sent // 100, last_txid=1000 + sent, checkpoint_txid=900,
                            elapsed_s=elapsed)


def test_terminal_line_is_rewritten_in_place_and_ended_on_close() -> None:
    now = [0.0]
    out = io.StringIO()
    reporter = ProgressReporter(out, tty=True, clock=lambda: now[0])
    now[0] = 1.0
    reporter.update(snap(1000, 1.0))
    now[0] = 1.2
    reporter.update(snap(1500, 1.2))  # within 0.5 s: not written
    now[0] = 2.0
    reporter.update(snap(3000, 2.0))
    reporter.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "sent 3,000 in 30 messages; txid 4000, checkpoint 900; 2,000 events/s" in text


def test_plain_log_lines_when_not_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    out = io.StringIO()
    reporter = ProgressReporter(out, tty=False, interval_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="onprem_agent.progress"):
        now[0] = 5.0
        reporter.update(snap(500, 5.0))
        now[0] = 6.0
        reporter.update(snap(600, 6.0))
        reporter.close(snap(700, 7.0))
    assert out.getvalue() == ""
    assert len(caplog.records) == 2
    assert "events read 505 (filtered out 5), sent 500" in caplog.records[0].message
