"""A quarantined manifest, through the Lambda handler on moto server: the lost manifest is
recorded in the index table and the index passes its range to the end, with the metric the
`index-bridged-ranges-<cluster>` alarm watches."""

from __future__ import annotations

from hdfs_events import names
from lambdas.ingest import handler
from tests.kit.index_builders import live, mkdir, mkfile
from tests.kit.ingest_aws import TABLE
from tests.kit.ingest_builders import manifests, pack
from tests.kit.lambda_events import Context, Sent, event
from tests.kit.replay import in_order_state


def test_a_quarantined_manifest_is_passed_and_the_index_reaches_the_end(
        aws, ddb, capsys, caplog) -> None:
    first = [mkdir(1, "/data"), mkdir(2, "/data/a"), mkfile(3, "/data/a/f")]
    lost = [mkfile(4, "/data/a/g")]
    last = [mkfile(5, "/data/a/h")]
    sent = [pack(first), pack(lost), pack(last)]
    (broken,) = manifests(sent[1], after=3)
    unreadable = Sent(body=broken.body[:40], encoding=None, group_id=broken.group_id,
                      dedup_id=broken.dedup_id, kind="manifest")
    delivery = [*sent[0], *manifests(sent[0]), *sent[1], unreadable,
                *sent[2], *manifests(sent[2], after=4)]

    assert handler.handler(event(*delivery), Context()) == {"batchItemFailures": []}
    assert aws.apply_requests(handler.handler) == 1

    assert '"IndexBridgedRanges":[1.0]' in capsys.readouterr().out.replace(" ", "")
    assert "index passed a range whose manifest was lost" in caplog.text
    # Every range but the lost one is in the index; the lost one's file is not.
    assert live(ddb) == in_order_state([*first, *last], "/data")
    lost_items = ddb.query(
        TableName=TABLE, KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": names.INDEX_PK},
        ExpressionAttributeValues={":pk": {"S": names.lost_manifests_partition("prod")}})
    assert lost_items["Count"] == 1
