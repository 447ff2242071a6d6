"""A real browser looks at the report: headless Chromium renders every chart."""

from __future__ import annotations

import pytest

from demo.browser import rendered_charts
from demo.lake import build_report
from demo.report import write_html

pytestmark = pytest.mark.slow


def test_every_chart_of_the_report_renders_in_chromium(chain_run, tmp_path) -> None:
    report = build_report(lake=chain_run.lake, expected=chain_run.source,
                          consumer=chain_run.consumer, log_path=chain_run.log_path,
                          compaction=chain_run.compaction, rollups=chain_run.rollups,
                          agent_kills=chain_run.kills, dlq_depth=chain_run.dlq_depth)
    page = write_html(report, tmp_path / "report")
    shot = tmp_path / "report" / "screenshot.png"
    charts = rendered_charts(page, screenshot=shot)
    assert set(charts) == {"chart-activity", "chart-types", "chart-dirs", "chart-lag"}
    for chart, (marks, area) in charts.items():
        assert marks > 0 and area > 0, f"{chart} drew nothing"
    assert shot.stat().st_size > 10_000
    assert report.figures["Lake equals source exactly (every field)"] == "yes"
