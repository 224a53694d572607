"""What scripts/openapi-check asks of Python (run with the interpreter of scripts/python-env).

    openapi_check.py document BASE
        Validates BASE/openapi.json as OpenAPI 3.1.
    openapi_check.py events BASE PATH=FILE...
        Checks the events recorded in each FILE (a stream of PATH, written by curl -N; a PATH
        with `updates=patch` must have sent a patch too) against
        the `text/event-stream` schema the document gives PATH's GET: each event against the
        schema of one event, and each event's `data` against its `contentSchema`, which JSON
        Schema leaves unchecked and schemathesis never sees (it asks for JSON, not streams).
"""

import json
import sys
import time

import httpx
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator


def fetch_document(base):
    return httpx.get(base + "/openapi.json", timeout=10).raise_for_status().json()


def document(base):
    served = fetch_document(base)
    validate(served, cls=OpenAPIV31SpecValidator)
    operations = sum(len(item) for item in served["paths"].values())
    print(f"openapi-check: {base}/openapi.json is a valid OpenAPI {served['openapi']} document, "
          f"{operations} operations on {len(served['paths'])} paths", file=sys.stderr)


def parse_events(text):
    """The events of a `text/event-stream` body as an EventSource sees them (comments skipped)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n")[:-1]:
        event = {}
        data = []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "retry":
                event["retry"] = int(value)
            elif field in ("event", "id"):
                event[field] = value
        if data:
            events.append({"event": event.get("event", "message"), "data": "\n".join(data), **{
                key: event[key] for key in ("id", "retry") if key in event}})
    return events


def validator(served, schema):
    """A validator of `schema` whose `#/components/...` references reach the document's."""
    return Draft202012Validator({**schema, "components": served["components"]})


def events(base, recordings):
    served = fetch_document(base)
    for recording in recordings:
        path, _, file = recording.rpartition("=")
        schema = served["paths"][path.split("?")[0]]["get"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
        # The stream was opened just before: wait (10 s at most) for its first snapshot; a
        # stream of patches (updates=patch), 20 s for its first patch (a demo group changes
        # every few seconds, the groups refresh every 5 s).
        due = ["stream", "snapshot"] + (["patch"] if "updates=patch" in path else [])
        deadline = time.monotonic() + (20 if "patch" in due else 10)
        while True:
            with open(file, encoding="utf-8") as recorded:
                received = parse_events(recorded.read())
            kinds = [event["event"] for event in received]
            if all(kind in kinds for kind in due) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if not all(kind in kinds for kind in due):
            sys.exit(f"openapi-check: {path}: expected {', '.join(due)} events, got {kinds}")
        for event in received:
            validator(served, schema).validate(event)
            variant = next(v for v in schema["oneOf"] if v["properties"]["event"]["const"] == event["event"])
            validator(served, variant["properties"]["data"]["contentSchema"]).validate(json.loads(event["data"]))
        print(f"openapi-check: {path}: {len(received)} events ({', '.join(kinds)}) match the document", file=sys.stderr)


if __name__ == "__main__":
    command, base, *rest = sys.argv[1:]
    {"document": lambda: document(base), "events": lambda: events(base, rest)}[command]()
