"""What tests, benchmarks and the demo stand on to build real inputs and stand in for AWS's
plumbing: a real HDFS (`hadoop`), the generated workload (`workload`, `client_workload`), the
in-order replay reference (`replay`), the consumer's messages, stores and AWS resources, the
local SQS -> Lambda runner (`sqs_lambda`), and the whole chain on one machine: the CDK app
deployed into moto server (`local_cloud`) and the agent, consumer and Glue jobs on it
(`local_chain`, `lambda_process`), with the checks of what it left (`index_check`, `lake_reads`).

The one kit under demo/, bench/ and tests/ (tests/unit/kit/test_kit_boundaries.py holds them to
it):
1. tests/kit/ imports the product (hdfs_events, onprem_agent, lambdas, glue_jobs, stacks,
   hdfs_events_cli, app) and itself only: never demo, bench, or tests.* outside the kit.
2. demo/ imports the product and tests.kit only: never bench, or tests.* outside the kit.
3. bench/ imports the product and tests.kit only: never demo, or tests.* outside the kit.
4. tests/ outside the kit imports demo or bench only in the modules whose subject is that
   package (tests of the demo's report and browser view; tests of bench code: tests/bench,
   tests/unit/bench); every other test gets what it needs from the kit.
"""
