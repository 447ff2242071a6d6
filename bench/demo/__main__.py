"""`make demo`: the main job on the embedded default.

Until the whole chain runs locally, the demo translates the bundled real NameNode edit log and
prints what the agent would ship.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from onprem_agent.editlog import read_ops
from onprem_agent.translate import TranslationStats, translate_ops

SAMPLE = Path(__file__).resolve().parents[2] / "onprem_agent/examples/edits/editsStored-layout-61.xml"


def main() -> int:
    stats = TranslationStats()
    events = list(translate_ops(read_ops(SAMPLE), "demo", source=str(SAMPLE), stats=stats))
    by_type = Counter(e.type.value for e in events)
    print(f"Edit log: {SAMPLE.name} ({stats.ops} ops, txids {events[0].txid}..{events[-1].txid})")
    print(f"Events: {len(events)}")
    for type_, n in sorted(by_type.items(), key=lambda kv: -kv[1]):
        print(f"  {type_:<9} {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
