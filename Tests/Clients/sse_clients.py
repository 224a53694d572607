#!/usr/bin/env python3
"""Real SSE clients people use, against the running service's GET /events.

Starts the release binary on its built-in demo (`tributary demo --listen 127.0.0.1:0`, from
the repository root, its port read from its log), then proves, for each of httpx-sse,
sseclient-py and curl -N, that the client reads one stream carrying groups, rows and search:

1. the first events are one `stream` event per resource, in request order, each with its id;
   then a `snapshot` of each resource, its data `{"resource": ..., "data": ...}`, its id the
   composite `groups:<v>,rows:<v>,search:<v>`;
2. reconnecting with that id as `Last-Event-ID` sends no unchanged document again: the rows
   and the search (which the demo never changes by itself) come again only once changed
   through the new stream's own ids (`loadMore` on a topic, a new `q`), so their first
   snapshots after the reconnect are the changed ones; every snapshot's id keeps the versions
   the client already has; the groups (the demo changes them every few seconds) come only if
   they changed.

Prints what it checks, then `N passed, M failed`; exits non-zero on a failure. Run it with
the project's Python tools: `"$(scripts/python-env)" Tests/Clients/sse_clients.py`.
Environment: TRIBUTARY_BIN (default: .build/release/tributary).
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Iterator

import httpx
import sseclient
from httpx_sse import connect_sse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("TRIBUTARY_BIN", os.path.join(ROOT, ".build", "release", "tributary"))
RESOURCES = ["groups", "rows", "search"]
PATH = "/events?resource=groups&resource=rows&resource=search&search.q=swift"
#: How long any one read or wait may take (the demo refreshes every 5 s, heartbeats every 15 s).
TIMEOUT = 10.0


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


@dataclass
class Event:
    type: str
    data: str
    id: str | None


# ---------------------------------------------------------------------------- the service

class Service:
    """The release binary serving its demo on a free loopback port; stopped by its PID."""

    def __init__(self) -> None:
        check(os.access(BINARY, os.X_OK), f"no binary at {BINARY} (swift build -c release --product tributary)")
        self.process = subprocess.Popen(
            [BINARY, "demo", "--listen", "127.0.0.1:0"], cwd=ROOT,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port: int | None = None
        self.log: list[str] = []
        ready = threading.Event()

        def read_log() -> None:
            for line in self.process.stderr:
                self.log.append(line)
                found = re.search(r"try: curl http://[^/\s]+:(\d+)/", line)
                if found and self.port is None:
                    self.port = int(found.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read_log, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            self.stop()
            raise Failure("the service did not start: " + "".join(self.log[-5:]))

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request(method, path, body=body)
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


# ---------------------------------------------------------------------------- the clients
# Each opens the stream (with a Last-Event-ID, or none) and yields its events as Event.

OpenStream = Callable[[str, "str | None"], "contextlib.AbstractContextManager[Iterator[Event]]"]


@contextlib.contextmanager
def httpx_sse_stream(url: str, last_id: str | None) -> Iterator[Iterator[Event]]:
    headers = {"Last-Event-ID": last_id} if last_id else {}
    with httpx.Client(timeout=httpx.Timeout(TIMEOUT)) as client:
        with connect_sse(client, "GET", url, headers=headers) as source:
            check(source.response.status_code == 200, f"status {source.response.status_code}")
            # httpx-sse's `id` is the stream's last event id; a snapshot always has its own.
            yield (Event(sse.event, sse.data, sse.id or None) for sse in source.iter_sse())


@contextlib.contextmanager
def sseclient_py_stream(url: str, last_id: str | None) -> Iterator[Iterator[Event]]:
    # sseclient-py parses any iterable of bytes: here the standard library's HTTP response.
    parsed = httpx.URL(url)
    connection = http.client.HTTPConnection(parsed.host, parsed.port, timeout=TIMEOUT)
    headers = {"Accept": "text/event-stream"}
    if last_id:
        headers["Last-Event-ID"] = last_id
    try:
        connection.request("GET", parsed.raw_path.decode(), headers=headers)
        response = connection.getresponse()
        check(response.status == 200, f"status {response.status}")

        def chunks() -> Iterator[bytes]:
            while chunk := response.read1(65536):
                yield chunk

        client = sseclient.SSEClient(chunks())
        yield (Event(event.event, event.data, event.id) for event in client.events())
    finally:
        connection.close()


@contextlib.contextmanager
def curl_stream(url: str, last_id: str | None) -> Iterator[Iterator[Event]]:
    # The first connection is plain `curl -N URL` (Accept: */*); the reconnect adds the headers.
    headers = ["-H", "Accept: text/event-stream", "-H", f"Last-Event-ID: {last_id}"] if last_id else []
    process = subprocess.Popen(["curl", "-sN", *headers, url], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    events: queue.Queue[Event | None] = queue.Queue()

    def parse() -> None:
        # The WHATWG event-stream interpretation, for the lines curl prints.
        kind, data, event_id = "", [], None
        for raw in process.stdout:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if data:
                    events.put(Event(kind or "message", "\n".join(data), event_id))
                kind, data, event_id = "", [], None
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
        events.put(None)

    threading.Thread(target=parse, daemon=True).start()

    def received() -> Iterator[Event]:
        while True:
            try:
                event = events.get(timeout=TIMEOUT)
            except queue.Empty:
                raise Failure(f"curl: no event within {TIMEOUT:g} s") from None
            if event is None:
                return
            yield event

    try:
        yield received()
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(5)


# ---------------------------------------------------------------------------- the proof

def versions(composite: str | None) -> list[tuple[str, str]]:
    check(composite is not None, "a snapshot without an id")
    return [tuple(entry.rsplit(":", 1)) for entry in composite.split(",")]


def next_event(events: Iterator[Event], what: str) -> Event:
    try:
        return next(events)
    except StopIteration:
        raise Failure(f"the stream ended while waiting for {what}") from None


def announcements(events: Iterator[Event]) -> list[dict]:
    announced = []
    for index in range(len(RESOURCES)):
        event = next_event(events, "the stream events")
        check(event.type == "stream", f"event {index + 1} is {event.type!r}, not a stream event")
        announced.append(json.loads(event.data))
    check([a["resource"] for a in announced] == RESOURCES, f"stream events for {[a['resource'] for a in announced]}")
    check(all(re.fullmatch(r"[0-9a-f]{32}", a["id"]) for a in announced), f"ids {[a['id'] for a in announced]}")
    return announced


def tagged(event: Event) -> tuple[str, object]:
    check(event.type == "snapshot", f"a {event.type} event: {event.data[:200]}")
    document = json.loads(event.data)
    # A view with inputs (search) also names the input values its document answers.
    expected = {"resource", "data", "inputs"} if document.get("resource") == "search" else {"resource", "data"}
    check(set(document) == expected, f"snapshot data with members {sorted(document)}")
    if "inputs" in expected:
        check(set(document["inputs"]) == {"q"}, f"search's snapshot names inputs {document['inputs']}, not q")
    return document["resource"], document["data"]


def first_connection(name: str, service: Service, open_stream: OpenStream) -> tuple[str, dict]:
    with open_stream(service.url(PATH), None) as events:
        announcements(events)
        documents: dict[str, object] = {}
        last_id = None
        while len(documents) < len(RESOURCES):
            event = next_event(events, "the first snapshots")
            resource, data = tagged(event)
            documents.setdefault(resource, data)
            last_id = event.id
            listed = [resource for resource, _ in versions(last_id)]
            check(listed == [r for r in RESOURCES if r in documents], f"id {last_id} after snapshots of {sorted(documents)}")
    groups, rows, search = documents["groups"], documents["rows"], documents["search"]
    check(isinstance(groups, list) and groups and all("taskCount" in group for group in groups), f"groups {str(groups)[:200]}")
    check(isinstance(rows, list) and rows and all({"topic", "medias"} <= set(row) for row in rows), f"rows {str(rows)[:200]}")
    check(isinstance(search, list) and search and all("swift" in (item["name"] + (item["description"] or "")).lower() for item in search),
          f"search {str(search)[:200]}")
    print(f"  {name}: 3 stream events (groups, rows, search, each its own id), then a snapshot of each tagged with its resource;"
          f" id {last_id}")
    return last_id, documents


def reconnect(name: str, service: Service, open_stream: OpenStream, last_id: str, documents: dict) -> None:
    had = dict(versions(last_id))
    topic = documents["rows"][0]["topic"]["id"]
    first_page = len(documents["rows"][0]["medias"])
    with open_stream(service.url(PATH), last_id) as events:
        ids = {a["resource"]: a["id"] for a in announcements(events)}
        # The rows load while the stream starts, and their unchanged snapshot is not sent to
        # say when they are in: until then loadMore is refused (400 for a topic not listed yet,
        # 409 for one whose first page is not in), and tried again.
        deadline = time.monotonic() + TIMEOUT
        while True:
            status, body = service.request("POST", f"/streams/{ids['rows']}/triggers/loadMore?topic={topic}")
            if status == 202 or time.monotonic() > deadline:
                break
            check((status == 400 and "no topic" in body) or (status == 409 and "has not loaded its first page yet" in body),
                  f"loadMore answered {status} {body}")
            time.sleep(0.05)
        check(status == 202, f"loadMore answered {status} {body}")
        status, body = service.request("PUT", f"/streams/{ids['search']}/inputs/q", body=b"vapor")
        check(status == 202, f"the input q answered {status} {body}")

        first: dict[str, object] = {}
        # The groups may keep coming (the demo changes them): the others are awaited within a bound.
        deadline = time.monotonic() + TIMEOUT
        while "rows" not in first or "search" not in first:
            check(time.monotonic() < deadline, f"no changed {' or '.join(r for r in ('rows', 'search') if r not in first)}"
                  f" within {TIMEOUT:g} s")
            event = next_event(events, "the changed rows and search")
            resource, data = tagged(event)
            current = dict(versions(event.id))
            if resource == "groups" and "groups" not in first:
                check(current["groups"] != had["groups"], "the unchanged groups were sent again")
            first.setdefault(resource, data)
            for other in RESOURCES:
                if other not in first:
                    check(current.get(other) == had[other], f"id {event.id} lost the {other} version the client has")
    rows = next(row for row in first["rows"] if row["topic"]["id"] == topic)
    check(len(rows["medias"]) > first_page, f"the first rows after reconnecting are the unchanged ones ({len(rows['medias'])} medias)")
    check(first["search"] and all("vapor" in item["name"] for item in first["search"]),
          f"the first search after reconnecting is not the one for q=vapor: {str(first['search'])[:200]}")
    groups = "sent again: changed meanwhile" if "groups" in first else "not sent: unchanged"
    print(f"  {name}: reconnect with Last-Event-ID: rows and search not sent again until changed (rows of {topic} with"
          f" {len(rows['medias'])} medias, search for vapor); groups {groups}; every id kept the versions the client had")


def main() -> int:
    clients: list[tuple[str, OpenStream]] = [
        ("httpx-sse", httpx_sse_stream), ("sseclient-py", sseclient_py_stream), ("curl -N", curl_stream)]
    passed = failed = 0
    service = Service()
    try:
        print(f"GET {PATH} on the demo at 127.0.0.1:{service.port}")
        for name, open_stream in clients:
            try:
                last_id, documents = first_connection(name, service, open_stream)
                reconnect(name, service, open_stream, last_id, documents)
                passed += 1
            except Exception as error:  # noqa: BLE001 - every failure becomes one line
                failed += 1
                where = traceback.extract_tb(error.__traceback__)[-1]
                print(f"  FAIL {name}: {error} (line {where.lineno})")
    finally:
        service.stop()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
