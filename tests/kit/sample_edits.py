"""The real edit log the repository bundles: Hadoop's own test suite's editsStored (layout -61,
txids 1..88, one record of most opcodes) as OfflineEditsViewer XML
(onprem_agent/examples/edits/README.md). Unit tests translate it, the e2e chain replays it first,
the as-deployed agent ships it."""

from pathlib import Path

SAMPLE_EDITS = Path(__file__).resolve().parents[2] / "onprem_agent/examples/edits/editsStored-layout-61.xml"
