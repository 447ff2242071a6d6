"""The demo's report: a short text summary for the terminal and an HTML page with charts.

Charts are inline SVG written here rather than a charting library: the page must open from
disk with no network (no CDN), and four simple charts do not justify a JavaScript dependency.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class MassDelete:
    """A flagged mass-delete window: the rollups' mass_deletes row, with who made its deletes
    as the rollups name them (from the attribution table)."""

    scope: str  # "owner" or "prefix", as the rollups flag it
    subject: str
    window: str
    files_removed: int
    under: str = ""  # the deepest directory holding every delete of the window
    user: str | None = None  # the row's `user`: its users, most files removed first
    unattributed: int = 0  # the row's `unattributed_deletes`: its deletes without a user

    def line(self) -> str:
        where = self.under or self.subject
        who = self.user or "(unknown)"
        if self.user and self.unattributed:
            who += f" ({self.unattributed:,} deletes unattributed)"
        elif not self.user:
            who += " (the audit join left every delete of it without a user)"
        owner = f", files of {self.subject}" if self.scope == "owner" else ""
        return (f"mass delete: {self.files_removed:,} files under {where} by {who} "
                f"({self.window}{owner})")


@dataclass(frozen=True, slots=True)
class DemoReport:
    source_events: int
    events_by_type: dict[str, int]
    lake_rows: int
    raw_rows: int  # rows in raw/ before compaction (duplicates included)
    quarantined: int
    quarantine_reasons: list[str]
    lag_ms: Sequence[float]  # per message: SQS send -> lake object written
    activity: list[tuple[str, int]]  # (minute label, events) in time order
    top_dirs_by_bytes: list[tuple[str, int]]
    mass_deletes: list[MassDelete]
    log_lines: list[str]
    figures: dict[str, str] = field(default_factory=dict)  # extra label -> value lines
    source_name: str = "the source"  # where the events the lake must equal come from
    provenance: list[str] = field(default_factory=list)  # what was live, what was replayed
    lake_differences: list[str] = field(default_factory=list)  # the first few, field by field
    attributed: int = 0  # lake events the audit join gave a user
    made_as_parents: int = 0  # directories a create or mkdirs made as parents (no line names)
    attributed_parents: int = 0  # of those, with a user anyway
    attribution_problems: list[str] = field(default_factory=list)  # the demo's check, failed

    @property
    def duplicates_removed(self) -> int:
        return self.raw_rows - self.lake_rows


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def text_summary(r: DemoReport) -> str:
    lines = [
        "",
        "hdfs-events demo: the whole chain on one machine",
        "=" * 48,
        *r.provenance,
        "",
        f"Source of truth: {r.source_name}",
        f"Source events:                                 {r.source_events:>9,}",
        f"Rows in the raw lake (with re-sends):          {r.raw_rows:>9,}",
        f"Rows in the compacted lake (Parquet):          {r.lake_rows:>9,}",
        f"Duplicates removed by compaction:              {r.duplicates_removed:>9,}",
        f"Poison messages quarantined:                   {r.quarantined:>9,}",
        f"Attributed: {r.attributed:,} of {r.lake_rows:,} events have a user "
        f"({_share(r.attributed, r.lake_rows)})" + ("" if not r.made_as_parents else (
            f"; {r.made_as_parents:,} are directories made as parents, which no audit line "
            f"names: {r.attributed - r.attributed_parents:,} of the other "
            f"{r.lake_rows - r.made_as_parents:,} "
            f"({_share(r.attributed - r.attributed_parents, r.lake_rows - r.made_as_parents)})")),
        f"Send-to-lake latency p50 / p99 (backfill burst, then live; one local consumer): "
        f"{percentile(r.lag_ms, 50) / 1000:.1f} s / {percentile(r.lag_ms, 99) / 1000:.1f} s",
    ]
    lines += [f"{k:<47}{v:>10}" for k, v in r.figures.items()]
    if r.lake_differences:
        lines += ["", "The lake differs from the source:"]
        lines += [f"  - {d}" for d in r.lake_differences]
    lines += ["", "Events by type:"]
    lines += [f"  {t:<10}{n:>9,}" for t, n in sorted(r.events_by_type.items(), key=lambda kv: -kv[1])]
    lines += ["", "Top directories by bytes written:"]
    lines += [f"  {d:<40}{_bytes(b):>12}" for d, b in r.top_dirs_by_bytes[:5]]
    if r.attribution_problems:
        lines += ["", "Attribution check failed:"]
        lines += [f"  - {p}" for p in r.attribution_problems]
    if r.mass_deletes:
        lines += ["", "Mass deletes detected:"]
        lines += [f"  {m.line()}" for m in r.mass_deletes[:5]]
    if r.quarantine_reasons:
        lines += ["", "Quarantine reasons:"]
        lines += [f"  - {reason}" for reason in r.quarantine_reasons[:5]]
    lines += ["", "Sample CloudWatch log lines (consumer Lambda; the fields Logs Insights queries use):"]
    lines += [f"  {_brief(line)}" for line in r.log_lines[:6]]
    return "\n".join(lines)


def write_html(r: DemoReport, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = [
        ("Activity over time (events per interval, NameNode time, UTC)",
         line_chart(r.activity), "chart-activity"),
        ("Events by type", bar_chart(sorted(r.events_by_type.items(), key=lambda kv: -kv[1])),
         "chart-types"),
        ("Top directories by bytes written",
         bar_chart([(d, b) for d, b in r.top_dirs_by_bytes[:10]], value_format=_bytes),
         "chart-dirs"),
        ("Send-to-lake latency per message, ms (backfill burst, then live; one local consumer)",
         histogram(r.lag_ms), "chart-lag"),
    ]
    stats = [
        ("Source events", f"{r.source_events:,}"),
        ("Compacted lake rows", f"{r.lake_rows:,}"),
        ("Duplicates removed", f"{r.duplicates_removed:,}"),
        ("Quarantined", f"{r.quarantined:,}"),
        ("Events with a user", f"{r.attributed:,} of {r.lake_rows:,}"),
        ("Latency p50", f"{percentile(r.lag_ms, 50):.0f} ms"),
        ("Latency p99", f"{percentile(r.lag_ms, 99):.0f} ms"),
        *r.figures.items(),
    ]
    stat_html = "".join(
        f'<div class="stat"><div class="v">{html.escape(v)}</div>'
        f'<div class="k">{html.escape(k)}</div></div>' for k, v in stats)
    chart_html = "".join(
        f'<section class="chart" id="{cid}"><h2>{html.escape(title)}</h2>{svg}</section>'
        for title, svg, cid in charts)
    logs = html.escape("\n".join(_brief(line) for line in r.log_lines[:20]))
    reasons = "".join(f"<li>{html.escape(x)}</li>" for x in r.quarantine_reasons[:20])
    provenance = "".join(f"<li>{html.escape(x)}</li>" for x in r.provenance)
    mass = "".join(f"<li>{html.escape(m.line())}</li>" for m in r.mass_deletes[:20])
    problems = "" if not r.attribution_problems else (
        "<h2>Attribution check failed</h2><ul>"
        + "".join(f"<li>{html.escape(x)}</li>" for x in r.attribution_problems) + "</ul>")
    differences = "" if not r.lake_differences else (
        "<h2>The lake differs from the source</h2><ul>"
        + "".join(f"<li>{html.escape(x)}</li>" for x in r.lake_differences) + "</ul>")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hdfs-events demo report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #1f2933; background: #f7f9fb; }}
h1 {{ margin-bottom: .2rem; }} .sub {{ color: #52606d; margin-top: 0; }}
.stats {{ display: flex; flex-wrap: wrap; gap: 1rem; margin: 1.5rem 0; }}
.stat {{ background: #fff; border-radius: 8px; padding: .8rem 1.2rem; box-shadow: 0 1px 3px #0002; }}
.stat .v {{ font-size: 1.5rem; font-weight: 600; }} .stat .k {{ color: #52606d; font-size: .85rem; }}
.grid {{ display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 1rem; }}
.chart {{ background: #fff; border-radius: 8px; padding: 1rem; box-shadow: 0 1px 3px #0002; }}
.chart h2 {{ font-size: 1rem; margin: 0 0 .5rem; }}
pre {{ background: #0b1722; color: #d9e2ec; padding: 1rem; border-radius: 8px; overflow-x: auto;
      font-size: .75rem; }}
</style></head><body>
<h1>hdfs-events demo</h1>
<p class="sub">HDFS NameNode &rarr; agent &rarr; SQS FIFO &rarr; consumer Lambda &rarr; S3 lake and
DynamoDB &rarr; Spark compaction and rollups, all on this machine (moto server, local Spark).</p>
<ul class="provenance">{provenance}</ul>
<p class="sub">The lake is checked against {html.escape(r.source_name)}, every field of every
event.</p>{differences}
<div class="stats">{stat_html}</div>
<div class="grid">{chart_html}</div>{problems}
<h2>Mass deletes, and who made them (NameNode audit log)</h2>
<ul class="mass-deletes">{mass or "<li>none flagged</li>"}</ul>
<h2>Quarantined messages</h2><ul>{reasons or "<li>none</li>"}</ul>
<h2>CloudWatch log lines (consumer Lambda)</h2><pre>{logs}</pre>
<script>
// Records what the browser actually laid out, so a headless check can tell a drawn chart from
// an empty one: the bounding box of each chart's drawn marks.
for (const s of document.querySelectorAll("section.chart svg")) {{
  const marks = s.querySelectorAll("rect, path, circle");
  let area = 0;
  for (const m of marks) {{ const b = m.getBBox(); area += b.width * b.height; }}
  s.closest("section").dataset.renderedMarks = marks.length;
  s.closest("section").dataset.renderedArea = Math.round(area);
}}
</script>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "-"


def _brief(line: str) -> str:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return line[:150]
    keys = ("level", "message", "cluster", "txid", "index", "type", "path", "dst_path", "reason")
    return json.dumps({k: doc[k] for k in keys if doc.get(k) is not None})[:200]


# --- charts -------------------------------------------------------------------------------
_W, _H, _PAD = 560, 260, 48


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _svg(body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" '
            f'height="{_H}" role="img">{body}</svg>')


def _empty(note: str) -> str:
    return _svg(f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle" fill="#9aa5b1">'
                f'{html.escape(note)}</text>')


def bar_chart(items: Sequence[tuple[str, float]], value_format=lambda v: f"{v:,.0f}") -> str:
    items = [(k, v) for k, v in items if v > 0]
    if not items:
        return _empty("no data")
    top = max(v for _, v in items)
    row_h = min((_H - 20) / len(items), 30)
    label_w = 190
    parts = []
    for i, (label, value) in enumerate(items):
        y = 10 + i * row_h
        w = (_W - label_w - 90) * value / top
        short = label if len(label) <= 28 else "…" + label[-27:]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + row_h * 0.65:.1f}" text-anchor="end" '
            f'font-size="11">{html.escape(short)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 2:.1f}" width="{max(w, 1):.1f}" '
            f'height="{max(row_h - 4, 1):.1f}" fill="#3e7cb1"><title>{html.escape(label)}: '
            f'{html.escape(value_format(value))}</title></rect>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + row_h * 0.65:.1f}" font-size="11">'
            f'{html.escape(value_format(value))}</text>')
    return _svg("".join(parts))


def line_chart(points: Sequence[tuple[str, float]]) -> str:
    if not points:
        return _empty("no data")
    top = max(v for _, v in points) or 1
    n = len(points)
    step = (_W - 2 * _PAD) / max(n - 1, 1)
    coords = [(_PAD + i * step, _H - _PAD - (_H - 2 * _PAD) * v / top)
              for i, (_, v) in enumerate(points)]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(coords))
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#3e7cb1"><title>'
                   f'{html.escape(points[i][0])}: {points[i][1]:,.0f}</title></circle>'
                   for i, (x, y) in enumerate(coords))
    axis = (f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#9aa5b1"/>'
            f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#9aa5b1"/>'
            f'<text x="{_PAD - 4}" y="{_PAD + 4}" text-anchor="end" font-size="10">{top:,.0f}</text>'
            f'<text x="{_PAD}" y="{_H - _PAD + 16}" font-size="10">{html.escape(points[0][0])}</text>'
            f'<text x="{_W - _PAD}" y="{_H - _PAD + 16}" text-anchor="end" font-size="10">'
            f'{html.escape(points[-1][0])}</text>')
    return _svg(axis + f'<path d="{path}" fill="none" stroke="#3e7cb1" stroke-width="2"/>' + dots)


def histogram(values: Sequence[float], bins: int = 20) -> str:
    if not values:
        return _empty("no data")
    lo, hi = min(values), max(values)
    width = (hi - lo) / bins or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / width), bins - 1)] += 1
    top = max(counts)
    bar_w = (_W - 2 * _PAD) / bins
    parts = [f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#9aa5b1"/>']
    for i, c in enumerate(counts):
        h = (_H - 2 * _PAD) * c / top
        parts.append(f'<rect class="bar" x="{_PAD + i * bar_w + 1:.1f}" y="{_H - _PAD - h:.1f}" '
                     f'width="{bar_w - 2:.1f}" height="{max(h, 0.5):.1f}" fill="#e3893f">'
                     f'<title>{lo + i * width:.0f}-{lo + (i + 1) * width:.0f} ms: {c}</title></rect>')
    parts.append(f'<text x="{_PAD}" y="{_H - _PAD + 16}" font-size="10">{lo:.0f} ms</text>')
    parts.append(f'<text x="{_W - _PAD}" y="{_H - _PAD + 16}" text-anchor="end" font-size="10">'
                 f'{hi:.0f} ms</text>')
    return _svg("".join(parts))
