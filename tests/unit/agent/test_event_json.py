"""The agent's fast canonical JSON is byte for byte the contract's."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType, XAttr
from onprem_agent.editlog import read_ops
from onprem_agent.event_json import event_json
from onprem_agent.translate import translate_ops
from tests.kit.workload import write_edit_log


def test_matches_to_json_on_the_real_edit_log(edits_sample: Path) -> None:
    events = list(translate_ops(read_ops(edits_sample), "c1"))
    assert [event_json(e) for e in events] == [e.to_json() for e in events]


def test_matches_to_json_on_a_generated_workload(tmp_path: Path) -> None:
    path = tmp_path / "edits.xml"
    write_edit_log(path, ops=5000, seed=11)
    events = list(translate_ops(read_ops(path), "c1"))
    assert [event_json(e) for e in events] == [e.to_json() for e in events]


text = st.text(max_size=20)
maybe_int = st.none() | st.integers(-(2**63), 2**63 - 1)


@given(st.builds(
    HdfsEvent, cluster=st.just("c1"), txid=st.integers(0, 2**62), index=st.integers(0, 9),
    type=st.sampled_from(EventType), path=text, dst_path=st.none() | text,
    timestamp=maybe_int, inode_type=st.none() | st.sampled_from(INodeType), ctime=maybe_int,
    owner=st.none() | text, perms=st.none() | st.just("0644"), overwrite=st.none() | st.booleans(),
    size=maybe_int, metadata_type=st.none() | st.sampled_from(MetadataType),
    acls=st.none() | st.lists(text, max_size=3).map(tuple),
    xattrs=st.none() | st.lists(st.builds(XAttr, namespace=st.just("USER"), name=text,
                                          value=st.none() | text), max_size=2).map(tuple),
))
def test_matches_to_json_on_any_event(event: HdfsEvent) -> None:
    assert event_json(event) == event.to_json()
