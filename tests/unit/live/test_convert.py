"""Real Hadoop inotify objects, built in the JVM with Hadoop's builders, -> contract records."""

from __future__ import annotations

from collections import Counter

import pytest

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType, XAttr
from onprem_agent.editlog import read_ops
from onprem_agent.live.convert import ConversionError, EventsListDecoder, JavaBatchConverter
from onprem_agent.translate import translate_batches
from tests.kit import java_events as je

C = "prod"


@pytest.fixture(scope="module")
def converter(inotify_messages) -> JavaBatchConverter:
    return JavaBatchConverter(C, inotify_messages)


def convert_one(converter: JavaBatchConverter, java_event, txid: int = 7) -> HdfsEvent:
    [batch] = converter.convert([je.event_batch(txid, [java_event])])
    assert batch.txid == txid
    [event] = batch.events
    return event


def test_every_event_of_the_real_edit_log_reads_as_the_translator_reads_it(
        converter, edits_sample):
    expected = [b for b in translate_batches(read_ops(edits_sample), C) if b.events]
    java_batches = [je.event_batch(b.txid, [je.to_java(e) for e in b.events]) for b in expected]
    assert converter.convert(java_batches) == expected
    seen = Counter(e.type for b in expected for e in b.events)
    # The sample covers all seven Hadoop types; GAP and SNAPSHOT are the agent's own records.
    assert set(seen) == set(EventType) - {EventType.GAP, EventType.SNAPSHOT}
    kinds = {e.metadata_type for b in expected for e in b.events}
    assert set(MetadataType) <= kinds


def test_create_file_carries_every_field(converter):
    create = je.event_class("CreateEvent")
    java = (create.Builder().iNodeType(create.INodeType.FILE).path("/data/a.csv").ctime(1700)
            .replication(3).ownerName("alice").groupName("hadoop").perms(je.fs_permission("0644"))
            .overwrite(True).defaultBlockSize(134217728).erasureCoded(True).build())
    assert convert_one(converter, java) == HdfsEvent(
        C, 7, 0, EventType.CREATE, "/data/a.csv", timestamp=1700, inode_type=INodeType.FILE,
        ctime=1700, replication=3, owner="alice", group="hadoop", perms="0644",
        overwrite=True, block_size=134217728, erasure_coded=True)


def test_create_file_without_erasure_coding_info_leaves_it_unknown(converter):
    create = je.event_class("CreateEvent")
    java = (create.Builder().iNodeType(create.INodeType.FILE).path("/f").ctime(1).replication(1)
            .ownerName("o").groupName("g").perms(je.fs_permission("0600")).build())
    event = convert_one(converter, java)
    assert event.erasure_coded is None
    assert event.overwrite is False and event.block_size == 0


def test_create_directory_keeps_no_file_only_fields(converter):
    create = je.event_class("CreateEvent")
    java = (create.Builder().iNodeType(create.INodeType.DIRECTORY).path("/tmp").ctime(5)
            .ownerName("hdfs").groupName("supergroup").perms(je.fs_permission("1777")).build())
    assert convert_one(converter, java) == HdfsEvent(
        C, 7, 0, EventType.CREATE, "/tmp", timestamp=5, inode_type=INodeType.DIRECTORY,
        ctime=5, owner="hdfs", group="supergroup", perms="1777")


def test_create_symlink_carries_its_target(converter):
    create = je.event_class("CreateEvent")
    java = (create.Builder().iNodeType(create.INodeType.SYMLINK).path("/l").ctime(9)
            .ownerName("o").groupName("g").perms(je.fs_permission("0777"))
            .symlinkTarget("/data/a.csv").build())
    event = convert_one(converter, java)
    assert (event.inode_type, event.symlink_target, event.replication) == (
        INodeType.SYMLINK, "/data/a.csv", None)


def test_close_after_concat_reports_minus_one(converter):
    java = je.event_class("CloseEvent")("/t", -1, 42)
    assert convert_one(converter, java) == HdfsEvent(C, 7, 0, EventType.CLOSE, "/t", size=-1,
                                                     timestamp=42)


@pytest.mark.parametrize("new_block", [True, False])
def test_append_new_block(converter, new_block):
    java = je.event_class("AppendEvent").Builder().path("/a").newBlock(new_block).build()
    assert convert_one(converter, java) == HdfsEvent(C, 7, 0, EventType.APPEND, "/a",
                                                     new_block=new_block)


def test_rename_unlink_truncate(converter):
    rename = (je.event_class("RenameEvent").Builder().srcPath("/a/_tmp").dstPath("/a/part-0")
              .timestamp(11).build())
    unlink = je.event_class("UnlinkEvent").Builder().path("/old").timestamp(12).build()
    truncate = je.event_class("TruncateEvent")("/log", 512, 13)
    [batch] = converter.convert([je.event_batch(3, [rename, unlink, truncate])])
    assert batch.events == (
        HdfsEvent(C, 3, 0, EventType.RENAME, "/a/_tmp", dst_path="/a/part-0", timestamp=11),
        HdfsEvent(C, 3, 1, EventType.UNLINK, "/old", timestamp=12),
        HdfsEvent(C, 3, 2, EventType.TRUNCATE, "/log", size=512, timestamp=13),
    )


def _meta(kind: str):
    meta = je.event_class("MetadataUpdateEvent")
    return meta.Builder().path("/m").metadataType(getattr(meta.MetadataType, kind))


def test_metadata_sets_only_the_fields_of_its_type(converter):
    events = [
        _meta("TIMES").mtime(100).atime(200).build(),
        _meta("REPLICATION").replication(2).build(),
        _meta("OWNER").ownerName("bob").groupName("eng").build(),
        _meta("PERMS").perms(je.fs_permission("0750")).build(),
    ]
    [batch] = converter.convert([je.event_batch(1, events)])
    m = MetadataType
    assert batch.events == (
        HdfsEvent(C, 1, 0, EventType.METADATA, "/m", metadata_type=m.TIMES, mtime=100,
                  atime=200),
        HdfsEvent(C, 1, 1, EventType.METADATA, "/m", metadata_type=m.REPLICATION,
                  replication=2),
        HdfsEvent(C, 1, 2, EventType.METADATA, "/m", metadata_type=m.OWNER, owner="bob",
                  group="eng"),
        HdfsEvent(C, 1, 3, EventType.METADATA, "/m", metadata_type=m.PERMS, perms="0750"),
    )


def test_chgrp_alone_leaves_the_owner_unset(converter):
    event = convert_one(converter, _meta("OWNER").groupName("eng").build())
    assert (event.owner, event.group) == (None, "eng")


def test_acl_entries_read_as_hadoop_prints_them(converter):
    acls = ["user::rw-", "user:alice:r-x", "group::r--", "mask::rwx", "other::---",
            "default:user:bob:rwx"]
    java = _meta("ACLS").acls(je.java_list([je.acl_entry(a) for a in acls])).build()
    assert convert_one(converter, java).acls == tuple(acls)
    for entry in acls:  # Hadoop's own toString agrees, entry by entry
        assert str(je.acl_entry(entry).toString()) == entry


def test_removing_all_acls_gives_an_empty_list_not_null(converter):
    # Hadoop's client turns an empty ACL list into null; the edit-log translator gives [].
    event = convert_one(converter, _meta("ACLS").build())
    assert event.acls == ()


def test_xattrs_namespace_name_and_hex_value(converter):
    xattrs = je.java_list([je.xattr("USER", "a1", b"123"), je.xattr("TRUSTED", "t", b""),
                           je.xattr("SECURITY", "s", None)])
    event = convert_one(converter, _meta("XATTRS").xAttrs(xattrs).xAttrsRemoved(False).build())
    assert event.xattrs == (XAttr("USER", "a1", "0x313233"), XAttr("TRUSTED", "t", "0x"),
                            XAttr("SECURITY", "s", None))
    assert event.xattrs_removed is False
    removed = convert_one(converter, _meta("XATTRS").xAttrs(
        je.java_list([je.xattr("RAW", "r", None)])).xAttrsRemoved(True).build())
    assert removed.xattrs == (XAttr("RAW", "r", None),) and removed.xattrs_removed is True


def test_batches_keep_their_txids_and_order(converter):
    batches = [je.event_batch(t, [je.event_class("UnlinkEvent").Builder().path(f"/{t}")
                                  .timestamp(t).build()]) for t in (10, 11, 15)]
    assert [(b.txid, b.events[0].path) for b in converter.convert(batches)] == [
        (10, "/10"), (11, "/11"), (15, "/15")]
    assert converter.convert([]) == []


def test_bytes_that_are_not_an_events_list_fail_clearly(inotify_messages):
    decoder = EventsListDecoder(C, inotify_messages)
    with pytest.raises(ConversionError, match="not an EventsListProto"):
        decoder.decode(b"\xff\xff\xff")
