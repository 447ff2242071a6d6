"""The cloud-side CLI `hdfs-events` (run by operators and cloud jobs: EMR, Glue) and the boto3
readers it stands on: the namespace index, the index's sequencer position. It imports the
contract (hdfs_events) and nothing else of this project; no deployable ships it (the consumer
Lambda's asset and the Glue library are hdfs_events plus their own package, stacks/assets.py)."""
