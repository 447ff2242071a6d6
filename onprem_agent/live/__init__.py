"""The live source: HDFS inotify through the real Hadoop client in an in-process JVM."""
