"""A stand-in for the `hadoop` launcher, for the copy worker's tests (no Hadoop here).

The tests write this file into a bin directory first on PATH, with a shebang naming the test
interpreter. It understands the two commands the worker runs:

    hadoop distcp [-update|-overwrite] [-filters FILE] [other options] SRC DST
        really copies s3a://bucket/prefix/ from S3 (boto3, so AWS_ENDPOINT_URL reaches moto)
        into $STANDIN_HADOOP_ROOT + DST, honouring -update, -overwrite and -filters (Java
        regexes, Pattern.matches() against "s3a://bucket/key", as RegexCopyFilter does)
    hadoop fs -ls -R PATH
        lists $STANDIN_HADOOP_ROOT + PATH in FsShell's format

Every invocation is appended to $STANDIN_HADOOP_LOG as a JSON line (argv, pid), before
anything else happens. $STANDIN_HADOOP_CONTROL names an optional JSON file that changes how
distcp behaves, read at each call:
    {"fail": N}          fail the next N calls (exit 1), counting down
    {"fail_always": true}
    {"hang": true}       never finish
    {"pause_s": S}       copy the first file, sleep S seconds, then copy the rest (slow copy)
    {"corrupt": true}    copy, then truncate one file (verification must notice)
"""

import json
import os
import re
import sys
import time
from pathlib import Path


def main(argv):
    _log(argv)
    if argv[:1] == ["distcp"]:
        return distcp(argv[1:])
    if argv[:3] == ["fs", "-ls", "-R"] and len(argv) == 4:
        return ls_recursive(argv[3])
    print(f"stand-in hadoop: unsupported command {argv}", file=sys.stderr)
    return 2


def distcp(args):
    control = _control()
    mode, filters, positional = None, [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-update", "-overwrite"):
            mode = arg
        elif arg == "-filters":
            i += 1
            filters = [_java_regex(line) for line in
                       Path(args[i]).read_text("utf-8").splitlines() if line]
        elif arg in ("-m", "-bandwidth", "-numListstatusThreads"):
            i += 1
        elif arg.startswith("-"):
            pass
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 2:
        print(f"stand-in distcp: expected SRC DST, got {positional}", file=sys.stderr)
        return 2
    if control.get("fail_always") or _take_failure(control):
        print("stand-in distcp: failing as told (ERROR tools.DistCp: Exception encountered)",
              file=sys.stderr)
        return 1
    if control.get("hang"):
        print("stand-in distcp: hanging as told", flush=True)
        while True:
            time.sleep(60)
    src, dst = positional
    match = re.fullmatch(r"s3a://([^/]+)/(.*)", src)
    if not match:
        print(f"stand-in distcp: source must be s3a://, got {src}", file=sys.stderr)
        return 2
    bucket, prefix = match.groups()
    import boto3

    s3 = boto3.client("s3")
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [(o["Key"], o["Size"]) for o in page.get("Contents", ())
                 if not o["Key"].endswith("/")]
    root = _local(dst)
    copied = 0
    # The _SUCCESS marker last, as the job that wrote the data did.
    keys.sort(key=lambda ks: (ks[0].endswith("/_SUCCESS"), ks[0]))
    for n, (key, size) in enumerate(keys):
        if any(f.fullmatch(f"s3a://{bucket}/{key}") for f in filters):
            continue
        target = root / key[len(prefix):]
        if mode == "-update" and target.exists() and target.stat().st_size == size:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        copied += 1
        if n == 0 and control.get("pause_s"):
            print(f"stand-in distcp: pausing {control['pause_s']} s as told", flush=True)
            time.sleep(float(control["pause_s"]))
    if control.get("corrupt"):
        victim = next((p for p in sorted(root.rglob("*")) if p.is_file()), None)
        if victim is not None:
            victim.write_bytes(victim.read_bytes()[:-1] + b"!!")
    print(f"stand-in distcp: copied {copied} files to {dst}")
    return 0


def ls_recursive(path):
    root = _local(path)
    if not root.exists():
        print(f"ls: `{path}': No such file or directory", file=sys.stderr)
        return 1
    entries = [root] if root.is_file() else sorted(root.rglob("*"))
    for p in entries:
        hdfs_path = path.rstrip("/") + "/" + str(p.relative_to(root)) if p != root else path
        if p.is_dir():
            print(f"drwxr-xr-x   - etl hadoop          0 2026-11-20 10:15 {hdfs_path}")
        else:
            size = p.stat().st_size
            print(f"-rw-r--r--   3 etl hadoop {size:10d} 2026-11-20 10:15 {hdfs_path}")
    return 0


def _local(hdfs_path):
    return Path(os.environ["STANDIN_HADOOP_ROOT"]) / hdfs_path.lstrip("/")


def _java_regex(line):
    """Java's \\Q...\\E quoting to Python's re.escape; the rest is the same syntax here."""
    out, rest = [], line
    while "\\Q" in rest:
        head, _, tail = rest.partition("\\Q")
        quoted, _, rest = tail.partition("\\E")
        out += [head, re.escape(quoted)]
    out.append(rest)
    return re.compile("".join(out))


def _control():
    name = os.environ.get("STANDIN_HADOOP_CONTROL")
    if not name or not Path(name).exists():
        return {}
    return json.loads(Path(name).read_text() or "{}")


def _take_failure(control):
    if control.get("fail", 0) <= 0:
        return False
    control["fail"] -= 1
    Path(os.environ["STANDIN_HADOOP_CONTROL"]).write_text(json.dumps(control))
    return True


def _log(argv):
    name = os.environ.get("STANDIN_HADOOP_LOG")
    if name:
        with open(name, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv, "pid": os.getpid()}) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
