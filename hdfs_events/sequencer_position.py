"""The consumer's sequencer position item ("<cluster>!position", names.position_partition): how
far the namespace index is applied in txid order. The consumer's DynamoSequenceStore updates
it; `index status` reads it (hdfs_events_cli/index_status.py); the inventory job puts it when it
writes a first start's index from an fsimage (glue_jobs/image_index.py). No I/O here.
"""

from __future__ import annotations

from hdfs_events import names

# Applied through `txid`, and of it up to event `idx` (TXID_DONE: all of it).
POSITION_TXID, POSITION_INDEX = "txid", "idx"
TXID_DONE = names.POSITION_TXID_DONE


def position_key(cluster: str) -> dict[str, dict[str, str]]:
    return {names.INDEX_PK: {"S": names.position_partition(cluster)},
            names.INDEX_SK: {"S": names.SEQUENCER_SK}}


def applied_through(cluster: str, txid: int) -> dict[str, dict[str, str]]:
    """The position item (wire format) of an index that holds every change up to and including
    `txid` and nothing after it: the sequencer goes on with the range that continues at txid+1."""
    return {**position_key(cluster), POSITION_TXID: {"N": str(txid)},
            POSITION_INDEX: {"N": str(TXID_DONE)}}
