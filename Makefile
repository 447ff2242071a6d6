# Two commands set everything up on a fresh machine (Python 3.11, Java 17, Node 20):
#   make demo   the whole chain on one machine, on the embedded default
#   make test   the whole suite
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ENV ?= dev
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install hadoop glue-jar test test-scale demo synth deploy cdk-cli bench lint clean

install: $(STAMP)

# Hadoop's own jars (NameNode, DataNode, MiniKdc, OfflineEditsViewer) and our Java inotify reader,
# resolved from Maven Central by tests/kit/hadoop/pom.xml into .hadoop/lib (git-ignored). Maven's
# local repository (~/.m2) keeps them: a second run downloads nothing.
HADOOP_STAMP := .hadoop/.installed
hadoop: $(HADOOP_STAMP)

$(HADOOP_STAMP): tests/kit/hadoop/pom.xml tests/kit/hadoop/kms/pom.xml $(wildcard tests/kit/hadoop/src/main/java/hdfsevents/kit/*.java)
	@command -v mvn >/dev/null || { echo "make: mvn not found: install Maven 3.8+ (apt-get install maven)"; exit 1; }
	rm -rf .hadoop/lib .hadoop/distcp .hadoop/kms
	mvn -q -B -f tests/kit/hadoop/pom.xml package dependency:copy-dependencies
	mvn -q -B -f tests/kit/hadoop/kms/pom.xml package
	touch $@

# Our own JVM code for the Glue jobs (glue_jobs/jvm/pom.xml: the compaction's canonical-line
# parser), compiled against the pyspark wheel's Spark jars: nothing downloaded but Maven's own
# plugins. ~10 s; the jar goes to glue_jobs/jvm/target (git-ignored).
GLUE_JAR := glue_jobs/jvm/target/hdfs-events-glue.jar
glue-jar: $(GLUE_JAR)

$(GLUE_JAR): glue_jobs/jvm/pom.xml $(wildcard glue_jobs/jvm/src/main/java/hdfsevents/glue/*.java) | $(STAMP)
	@command -v mvn >/dev/null || { echo "make: mvn not found: install Maven 3.8+ (apt-get install maven)"; exit 1; }
	mvn -q -B -f glue_jobs/jvm/pom.xml package -Dpyspark.jars=$(CURDIR)/$(VENV)/lib/python3.11/site-packages/pyspark/jars
	touch $@

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found: install Python 3.11"; exit 1; }
	@command -v java >/dev/null || { echo "make: java not found: install a Java 17 runtime (Spark and the Hadoop client need it)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

# Debian's Chromium for the report's browser check (tests/e2e); installed once.
.make/chromium:
	@mkdir -p .make
	@if ! command -v chromium >/dev/null; then \
	  echo "make: installing Debian's chromium for the browser check"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "make: could not install chromium (apt-get as root)"; exit 1; }; \
	fi
	touch $@

# The consumer Lambda as AWS runs it (tests/integration/deployed): the python3.11 runtime's boto3
# (tests/integration/deployed/lambda_runtime_sdk.txt says which and why) and, apart, the Powertools
# layer's packages at the versions constraints.txt pins, nothing else. pip --target into two
# directories the test puts on sys.path itself, as Lambda does /var/runtime and /opt/python.
# First run ~10 s (pip downloads ~15 MB), later runs nothing.
LAMBDA_RUNTIME := .make/lambda-runtime
$(LAMBDA_RUNTIME)/.installed: constraints.txt tests/integration/deployed/lambda_runtime_sdk.txt | $(STAMP)
	rm -rf $(LAMBDA_RUNTIME)
	$(PY) -m pip install --quiet --target $(LAMBDA_RUNTIME)/runtime \
	  -r tests/integration/deployed/lambda_runtime_sdk.txt
	$(PY) -m pip install --quiet --no-deps --target $(LAMBDA_RUNTIME)/layer/python -c constraints.txt \
	  aws-lambda-powertools aws-xray-sdk wrapt jmespath typing-extensions
	touch $@

# The Glue jobs as Glue 5.1 runs them (tests/integration/deployed): Spark 3.5 (pyspark) and boto3,
# the modules Glue provides that the entry scripts and the --extra-py-files zip may import,
# nothing else. pyspark and py4j are linked from the dev venv (the same wheel, 345 MB not
# copied); boto3 comes from pip's cache at the constraints.txt pin. First run ~10 s, later nothing.
GLUE_RUNTIME := .make/glue-runtime
$(GLUE_RUNTIME)/.installed: constraints.txt | $(STAMP)
	rm -rf $(GLUE_RUNTIME)
	$(PY) -m pip install --quiet --target $(GLUE_RUNTIME)/site-packages -c constraints.txt boto3
	ln -s $(CURDIR)/$(VENV)/lib/python3.11/site-packages/pyspark \
	  $(CURDIR)/$(VENV)/lib/python3.11/site-packages/pyspark-*.dist-info \
	  $(CURDIR)/$(VENV)/lib/python3.11/site-packages/py4j \
	  $(CURDIR)/$(VENV)/lib/python3.11/site-packages/py4j-*.dist-info $(GLUE_RUNTIME)/site-packages/
	touch $@

# Class-data-sharing archives for the Spark JVMs of a test session (tests/kit/spark_jvm.py says
# why): dumped by one small local job, again whenever the venv (and so Spark's jars) changes.
# ~30 s once; each test Spark JVM then starts on about half the CPU.
SPARK_CDS := .make/spark-cds
$(SPARK_CDS)/.installed: tests/kit/spark_jvm.py $(STAMP)
	$(PY) -m tests.kit.spark_jvm $(SPARK_CDS)
	touch $@

# The slowest tests are listed last: where the suite's time goes.
test: $(STAMP) $(HADOOP_STAMP) $(GLUE_JAR) .make/chromium $(LAMBDA_RUNTIME)/.installed \
  $(GLUE_RUNTIME)/.installed $(SPARK_CDS)/.installed
	$(PY) -m pytest tests -n 2 --durations=25

# Issue #32's must-show at production size (tests/scale, marker `scale`, which `make test`
# leaves out): both first starts and the inventory on the kit's namespace of SCALE_FILES files.
SCALE_FILES ?= 1000000
test-scale: $(STAMP) $(HADOOP_STAMP) $(GLUE_JAR)
	HDFS_EVENTS_SCALE_FILES=$(SCALE_FILES) $(PY) -m pytest tests/scale -m scale -rP --show-capture=stdout --timeout 3000

demo: $(STAMP) $(HADOOP_STAMP)
	$(PY) -m demo

synth: $(STAMP) $(GLUE_JAR)
	$(PY) app.py --env $(ENV) --outdir cdk.out

# The CDK CLI, pinned to major 2 in package.json (aws-cdk@3 rejects this aws-cdk-lib's assembly).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

cdk-cli: node_modules/.installed

deploy: $(STAMP) $(GLUE_JAR) node_modules/.installed
	npx cdk deploy -c env=$(ENV) --all

# make bench BENCH_ARGS="--only compact --size full": one bench at its own default size
# (compaction: 10M events); python -m bench.run_all --help lists the rest.
bench: $(STAMP) $(HADOOP_STAMP)
	$(PY) -m bench.run_all $(BENCH_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf cdk.out demo-out bench-out .pytest_cache .make .hadoop glue_jobs/jvm/target
