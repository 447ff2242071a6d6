"""Live replication of covered HDFS directories to S3 (`hdfs-events-agent sync`); docs/sync.md."""
