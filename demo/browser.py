"""Looks at the demo report in a real browser: headless Chromium (Debian's package).

Chromium loads the page from disk, runs its small layout probe, and dumps the DOM; each chart
section then carries the number of marks drawn and their laid-out area. A screenshot is saved
beside the report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# The flags this machine needs: no sandbox as root, no GPU, and no background networking (the
# network is closed here, and Chromium otherwise keeps trying to reach Google's hosts).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-quic")


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("chromium not found: `make test` installs Debian's chromium package")


def _run(args: list[str], profile: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def rendered_charts(page: Path, screenshot: Path | None = None) -> dict[str, tuple[int, int]]:
    """{chart section id: (marks drawn, laid-out area in px^2)} as Chromium rendered the page."""
    url = page.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        dom = _run(["--virtual-time-budget=5000", "--dump-dom", url], profile)
        if dom.returncode != 0:
            raise RuntimeError(f"chromium failed ({dom.returncode}): {dom.stderr[-800:]}")
        if screenshot is not None:
            shot = _run([f"--screenshot={screenshot.resolve()}", "--window-size=1280,1700",
                         "--hide-scrollbars", url], profile)
            if shot.returncode != 0 or not screenshot.exists():
                raise RuntimeError(f"chromium screenshot failed: {shot.stderr[-800:]}")
    charts: dict[str, tuple[int, int]] = {}
    for tag in re.findall(r"<section[^>]*class=\"chart\"[^>]*>", dom.stdout):
        cid = re.search(r'id="([^"]+)"', tag)
        marks = re.search(r'data-rendered-marks="(\d+)"', tag)
        area = re.search(r'data-rendered-area="(\d+)"', tag)
        charts[cid.group(1) if cid else "?"] = (int(marks.group(1)) if marks else 0,
                                                int(area.group(1)) if area else 0)
    return charts
