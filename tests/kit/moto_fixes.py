"""The kit's correctness fixes to moto 5.2, applied together wherever a moto server runs, and
moto's own server CLI with them (`python -m tests.kit.moto_fixes -H 127.0.0.1 -p PORT`, what
tests/kit/service_process.py starts): DynamoDB's lost writes into a new partition
(moto_dynamodb_lock.py) and SQS's messages lost to a concurrent delete (moto_sqs_lock.py).
Each is a case where moto acknowledged what AWS would have kept and then did not keep it."""

from __future__ import annotations

import sys


def apply() -> None:
    from tests.kit import moto_dynamodb_lock, moto_sqs_lock

    moto_dynamodb_lock.apply()
    moto_sqs_lock.apply()


if __name__ == "__main__":
    apply()
    from moto.server import main

    main(sys.argv[1:])
