"""`hdfs-events-agent audit run`: the NameNode's audit log, tailed where log4j writes it and
shipped to the lake as gzip'd JSON-lines objects (raw-audit/, hdfs_events.names), exactly once by
line identity (hdfs_events/audit.py). No JVM: it reads local files.

settings.py reads [audit]; logfiles.py follows the rotating files by identity; position.py keeps
where the last shipped object ended; shipper.py chooses, parses and writes; metrics.py counts.
"""
