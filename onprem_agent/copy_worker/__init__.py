"""The return channel: copy S3 prefixes into HDFS on request, validated, tracked and verified.

settings   the agent config's [copy] section, checked (errors name the key and the file)
allowlist  the deployment's allow-lists applied to a contract-valid request
failures   Rejected (never retried) and CopyFailed (retried with backoff, then the DLQ)
listing    S3 source listing (boto3) and HDFS destination listing (`hadoop fs -ls -R`)
plan       pure: what to copy, what to exclude, and the verification of the result
distcp     runs the configured distcp command as an argument list, with a timeout
heartbeat  keeps the SQS message invisible while the copy runs
transfers  the DynamoDB transfers table as a state machine with conditional writes
outcome    SNS notification, CloudWatch metric and log line for each finished request
worker     the long-poll loop and the per-request procedure, on a bounded thread pool
"""
