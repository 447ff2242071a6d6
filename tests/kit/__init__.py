"""What tests, benchmarks and the demo share to build real inputs: a real HDFS (`hadoop`)."""
