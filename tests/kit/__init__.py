"""What tests, benchmarks and the demo share to build real inputs and stand in for AWS's
plumbing: a real HDFS (`hadoop`), the generated workload (`workload`, `client_workload`), the
in-order replay reference (`replay`), the consumer's messages, stores and AWS resources, and the
local SQS -> Lambda runner (`sqs_lambda`). bench/ and demo/ use it, never the other way round."""
