#!/usr/bin/env python3
"""`?updates=patch` read by a standard JSON Patch library, over 1,000 random changes.

Starts a scripted upstream here (the `tasks` and `search` APIs, answering from data this test
changes) and the release binary against it (`tributary serve`, two workers, so the shared
pipeline is bridged to the second worker's streams), then, for every change, checks that the
client's document, patched with PyPI's `jsonpatch` (RFC 6902), equals the JSON GET of that
version, and that the event's id is that GET's ETag:

1. `GET /groups?updates=patch` (the shared pipeline, refreshed by `POST /groups/reload`): 500
   random changes of the list and of its items' details;
2. `GET /events?resource=groups&resource=search&search.q=…&updates=patch` (one stream, two
   resources; the search a view of its own, changed through its input `q`): 500 more, each of
   one resource, the search's documents arbitrary JSON;
3. `GET /groups?updates=patch&progressive=true&fields=id,taskCount,tags.name`: a new
   pipeline's first document in steps (the list, then the details), each event applied, the
   last equal to the JSON GET with those fields; then 500 more changes, each checked against
   that GET (a change of members it does not keep sends nothing).

Changes are inserts, removals, moves, shuffles, edits of members and of nested values, ids
that are numbers and strings (`7` and `"7"` both), repeated ids, items without an id. After a
change whose document is the one the client has, no event may come; after any other, exactly
one (`patch`, or `snapshot` when the patch would not be smaller). Prints a summary, then
`N passed, M failed`. Run it with the project's Python tools:
`"$(scripts/python-env)" Tests/Clients/json_patch_streams.py [--seed N] [--changes N]`.
Environment: TRIBUTARY_BIN (default: .build/release/tributary).
"""
from __future__ import annotations

import argparse
import copy
import http.client
import http.server
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import urllib.parse
from typing import Iterator

import httpx
import jsonpatch
from httpx_sse import connect_sse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("TRIBUTARY_BIN", os.path.join(ROOT, ".build", "release", "tributary"))
#: How long any one read or wait may take.
TIMEOUT = 10.0


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def same(a, b) -> bool:
    """Equal as JSON values, kinds included (Python's `True == 1` is not JSON's)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------- random data

STRINGS = ["", "x", 'Grüße "quoted" \\ back ✓', "é", "e\u0301", "line\nbreak", "a/b", "~0", "1", "swift"]
KEYS = ["name", "count", "tags", "meta", "a/b", "~x", "", "é", "e\u0301", "K", "\u212a", "nested"]


class World:
    """The upstream's data: the group list, each id's details, and the search answers by query."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.groups: list[dict] = [self.group() for _ in range(rng.randint(5, 20))]
        self.details: dict[str, dict] = {}
        for group in self.groups:
            self.ensure_details(group)
        self.searches: dict[str, list] = {}
        self.lock = threading.Lock()
        #: Calls answered, and calls in flight, under `calls_changed`.
        self.answered = 0
        self.in_flight = 0
        self.calls_changed = threading.Condition()

    def wait_for_calls(self, count: int) -> None:
        """Waits until `count` calls are answered and none is in flight: the refresh a reload
        started has fetched all it will (else it could see the next change half made)."""
        with self.calls_changed:
            done = self.calls_changed.wait_for(lambda: self.answered >= count and self.in_flight == 0, TIMEOUT)
        check(done, f"{self.answered} upstream calls answered ({self.in_flight} in flight), {count} due")

    def calls_per_fetch(self) -> int:
        """The calls one fetch of the groups makes: the list, and the details of each item with an id."""
        with self.lock:
            return 1 + sum(1 for group in self.groups if "id" in group)

    def id(self):
        """A number or a string, from a small range, so that 7 and "7" both occur."""
        n = self.rng.randint(0, 60)
        return n if self.rng.random() < 0.5 else self.rng.choice([str(n), f"g {n}", f"ü-{n}"])

    def scalar(self):
        return self.rng.choice([None, True, False, self.rng.randint(-5, 1000), 1.5, -0.25, self.rng.choice(STRINGS)])

    def value(self, depth: int = 0):
        roll = self.rng.random()
        if depth >= 3 or roll < 0.5:
            return self.scalar()
        if roll < 0.75:
            return [self.value(depth + 1) for _ in range(self.rng.randint(0, 4))]
        return {self.rng.choice(KEYS): self.value(depth + 1) for _ in range(self.rng.randint(0, 4))}

    def item(self, depth: int = 0) -> dict:
        """A nested item: mostly with an id, sometimes without."""
        item = {} if self.rng.random() < 0.05 else {"id": self.id()}
        item["name"] = self.rng.choice(STRINGS)
        if depth < 1 and self.rng.random() < 0.4:
            item["tags"] = [self.item(depth + 1) for _ in range(self.rng.randint(0, 4))]
        if self.rng.random() < 0.3:
            item["meta"] = self.value(1)
        return item

    def group(self) -> dict:
        group = {"name": self.rng.choice(STRINGS)}
        if self.rng.random() > 0.04:
            group = {"id": self.id(), **group}
        return group

    def ensure_details(self, group: dict) -> None:
        if "id" in group and str(group["id"]) not in self.details:
            self.details[str(group["id"])] = self.new_details()

    def new_details(self) -> dict:
        details = {"taskCount": self.rng.randint(0, 50), "lastUpdated": f"2026-11-{self.rng.randint(10, 28)}T10:00:00Z"}
        if self.rng.random() < 0.6:
            details["tags"] = [self.item(1) for _ in range(self.rng.randint(0, 5))]
        if self.rng.random() < 0.3:
            details["extra"] = self.value(1)
        return details

    def change_list(self, items: list, make) -> None:
        """One random change of `items` in place; `make` makes a new item."""
        rng = self.rng
        kind = rng.randrange(8)
        if kind == 0 or not items:
            items.insert(rng.randint(0, len(items)), make())
        elif kind == 1:
            items.pop(rng.randrange(len(items)))
        elif kind == 2:
            moved = items.pop(rng.randrange(len(items)))
            items.insert(rng.randint(0, len(items)), moved)
        elif kind == 3 and len(items) > 1:
            # An id already there (a repeated id), or a new one.
            index = rng.randrange(len(items))
            if isinstance(items[index], dict):
                other = items[rng.randrange(len(items))]
                items[index]["id"] = other.get("id", self.id()) if isinstance(other, dict) and rng.random() < 0.5 else self.id()
        elif kind == 4:
            index = rng.randrange(len(items))
            if isinstance(items[index], dict):
                items[index].pop("id", None)
        elif kind == 5 and rng.random() < 0.2:
            rng.shuffle(items)
        else:
            index = rng.randrange(len(items))
            if isinstance(items[index], dict):
                items[index][rng.choice(["name", "meta", "extra"])] = self.value(1)
            else:
                items[index] = make()

    def change_groups(self) -> None:
        with self.lock:
            for _ in range(self.rng.randint(1, 3)):
                if self.rng.random() < 0.6:
                    self.change_list(self.groups, self.group)
                    for group in self.groups:
                        self.ensure_details(group)
                else:
                    self.change_details()

    def change_details(self) -> None:
        """A change of one item's details: its count, or its nested items."""
        with_id = [g for g in self.groups if "id" in g]
        if not with_id:
            return
        details = self.details[str(self.rng.choice(with_id)["id"])]
        roll = self.rng.random()
        if roll < 0.4:
            details["taskCount"] = self.rng.randint(0, 50)
        elif roll < 0.9:
            tags = details.setdefault("tags", [])
            self.change_list(tags, lambda: self.item(1))
        else:
            details["extra"] = self.value(1)

    def search_answer(self, previous: list) -> list:
        """The next search answer: the previous one changed, or now and then a new one."""
        answer = copy.deepcopy(previous)
        if self.rng.random() < 0.05:
            return [self.rng.choice([self.item(), self.value()]) for _ in range(self.rng.randint(0, 8))]
        for _ in range(self.rng.randint(1, 3)):
            self.change_list(answer, lambda: self.item() if self.rng.random() < 0.9 else self.value())
        return answer

    # The upstream's answers.

    def answer(self, path: str, query: dict) -> tuple[int, object]:
        with self.lock:
            if path == "/groups":
                return 200, {"result": self.groups}
            found = re.fullmatch(r"/groups/(.+)/metadata", path)
            if found:
                details = self.details.get(urllib.parse.unquote(found.group(1)))
                return (200, {"result": details}) if details is not None else (404, {"error": "no such group"})
            if path == "/search" and "q" in query:
                return 200, {"items": self.searches.get(query["q"], [])}
            return 404, {"error": "nothing here"}


class Upstream:
    """An HTTP/1.1 upstream on a free loopback port, answering from `world`."""

    def __init__(self, world: World) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                with world.calls_changed:
                    world.in_flight += 1
                try:
                    parsed = urllib.parse.urlsplit(self.path)
                    query = dict(urllib.parse.parse_qsl(parsed.query))
                    status, document = world.answer(parsed.path, query)
                    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                finally:
                    with world.calls_changed:
                        world.in_flight -= 1
                        world.answered += 1
                        world.calls_changed.notify_all()

            def log_message(self, *args) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:
                # A call the service cancelled (a refresh superseded, a pipeline stopped) ends
                # in a reset: expected, and not worth a traceback.
                if isinstance(sys.exc_info()[1], ConnectionResetError):
                    return
                super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------------------- the service

class Service:
    """The release binary with two workers against the upstream; stopped by its PID."""

    def __init__(self, upstream_port: int, directory: str) -> None:
        check(os.access(BINARY, os.X_OK), f"no binary at {BINARY} (swift build -c release --product tributary)")
        url = f"http://127.0.0.1:{upstream_port}"
        config = os.path.join(directory, "tributary.yaml")
        with open(config, "w") as file:
            file.write(f"""
server:
  workers: 2
upstreams:
  tasks: {{url: "{url}", timeout: 5s, retries: 0}}
  search: {{url: "{url}", timeout: 5s, retries: 0}}
resources:
  groups:
    kind: list
    upstream: tasks
    list: {{path: /groups, items: result, id: id}}
    details: {{path: "/groups/{{id}}/metadata", value: result}}
    refreshInterval: 1h
  search:
    kind: search
    upstream: search
    path: /search
    parameter: q
    items: items
    minimumLength: 1
    debounce: 10ms
""")
        self.process = subprocess.Popen(
            [BINARY, "serve", "--config", config, "--listen", "127.0.0.1:0"], cwd=directory,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("TRIBUTARY_")})
        self.port: int | None = None
        self.log: list[str] = []
        ready = threading.Event()

        def read_log() -> None:
            for line in self.process.stderr:
                self.log.append(line)
                found = re.search(r"address=127\.0\.0\.1:(\d+) workers=", line)
                if found and self.port is None:
                    self.port = int(found.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read_log, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            self.stop()
            raise Failure("the service did not start: " + "".join(self.log[-5:]))
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=httpx.Timeout(TIMEOUT))

    def get(self, path: str) -> tuple[object, str]:
        """The JSON answer of `path` and its version (the ETag)."""
        response = self.client.get(path)
        check(response.status_code == 200, f"GET {path}: {response.status_code} {response.text[:200]}")
        return response.json(), response.headers["ETag"].removeprefix("W/").strip('"')

    def request(self, method: str, path: str, body: bytes | None = None) -> None:
        response = self.client.request(method, path, content=body)
        check(response.status_code == 202, f"{method} {path}: {response.status_code} {response.text[:200]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


class Stream:
    """One event stream read with httpx-sse; every event is applied to the client's documents."""

    def __init__(self, service: Service, path: str) -> None:
        self.context = connect_sse(service.client, "GET", path)
        source = self.context.__enter__()
        check(source.response.status_code == 200, f"GET {path}: {source.response.status_code}")
        self.events: Iterator = source.iter_sse()
        self.documents: dict[str, object] = {}
        self.counts = {"snapshot": 0, "patch": 0, "operations": 0, "patch bytes": 0, "snapshot bytes": 0}
        self.announced: dict[str, str] = {}

    def next(self):
        try:
            return next(self.events)
        except StopIteration:
            raise Failure("the stream ended") from None

    def take(self, tagged: bool, single: str | None = None) -> tuple[str, str]:
        """Reads the next document event and applies it; its resource and id."""
        while True:
            event = self.next()
            if event.event == "message" and event.data == "":
                # A heartbeat comment: httpx-sse reports its blank line as an empty event once
                # the stream has had an id.
                continue
            if event.event == "stream":
                announcement = json.loads(event.data)
                self.announced[announcement.get("resource", single)] = announcement["id"]
                continue
            check(event.event in ("snapshot", "patch"), f"an event {event.event}: {event.data[:200]}")
            data = json.loads(event.data)
            resource = data["resource"] if tagged else single
            body = (data["data"] if event.event == "snapshot" else data["patch"]) if tagged else data
            if event.event == "snapshot":
                self.documents[resource] = body
                self.counts["snapshot bytes"] += len(event.data.encode())
            else:
                check(resource in self.documents, f"a patch of {resource} before its snapshot")
                check(isinstance(body, list), f"a patch that is not an array: {event.data[:200]}")
                self.documents[resource] = jsonpatch.apply_patch(self.documents[resource], body)
                self.counts["operations"] += len(body)
                self.counts["patch bytes"] += len(event.data.encode())
            self.counts[event.event] += 1
            return resource, event.id

    def close(self) -> None:
        self.context.__exit__(None, None, None)


def version_of(resource: str, event_id: str, tagged: bool) -> str:
    if not tagged:
        return event_id
    return dict(entry.rsplit(":", 1) for entry in event_id.split(","))[resource]


def expect_current(stream: Stream, service: Service, resource: str, path: str, event_id: str, tagged: bool, step: int) -> None:
    served, etag = service.get(path)
    check(version_of(resource, event_id, tagged) == etag, f"change {step}: the event's id {event_id} is not GET {path}'s ETag {etag}")
    check(same(stream.documents[resource], served), f"change {step}: the patched {resource} is not GET {path}:\n"
          f"  patched {json.dumps(stream.documents[resource], ensure_ascii=False)[:600]}\n"
          f"  served  {json.dumps(served, ensure_ascii=False)[:600]}")


# ---------------------------------------------------------------------------- the proof

def groups_stream(world: World, service: Service, changes: int) -> str:
    stream = Stream(service, "/groups?updates=patch")
    try:
        _, current = stream.take(False, "groups")
        expect_current(stream, service, "groups", "/groups", current, False, 0)
        quiet = 0
        for step in range(1, changes + 1):
            before = world.answered
            world.change_groups()
            service.request("POST", "/groups/reload")
            # The refresh fetches what GET fetches: the upstream does not change until both are done.
            served, version = service.get("/groups")
            world.wait_for_calls(before + 2 * world.calls_per_fetch())
            if version == current:
                quiet += 1  # the same document: no event is due (the next one checks none came)
                continue
            _, event_id = stream.take(False, "groups")
            check(event_id == version, f"change {step}: an event with id {event_id}, the document's version is {version}")
            check(same(stream.documents["groups"], served), f"change {step}: the patched groups are not GET /groups:\n"
                  f"  patched {json.dumps(stream.documents['groups'], ensure_ascii=False)[:600]}\n"
                  f"  served  {json.dumps(served, ensure_ascii=False)[:600]}")
            current = event_id
        counts = stream.counts
        return (f"{changes} changes: {counts['patch']} patches ({counts['operations']} operations, {counts['patch bytes']} bytes),"
                f" {counts['snapshot']} snapshots ({counts['snapshot bytes']} bytes), {quiet} changes the document did not show")
    finally:
        stream.close()


# The members the projected stream keeps: the id, the count, and one nested member of each tag.
PROJECTION = "id,taskCount,tags.name"


def projected_stream(world: World, service: Service, changes: int) -> str:
    """`GET /groups?updates=patch&progressive=true&fields=…`: a new pipeline's first document
    progressively (the list, then the details), then each change of the kept members as a
    patch; a change the projection does not show sends nothing."""
    path = f"/groups?fields={PROJECTION}"
    stream = Stream(service, f"{path}&updates=patch&progressive=true")
    try:
        # The first document may come in steps: the last one is the JSON GET's.
        served, current = service.get(path)
        partial = 0
        while True:
            _, event_id = stream.take(False, "groups")
            if event_id == current:
                break
            partial += 1
            check(partial < 50, f"no complete first document after {partial} events")
        check(same(stream.documents["groups"], served), "the first complete document is not GET " + path)
        quiet = 0
        for step in range(1, changes + 1):
            before = world.answered
            world.change_groups()
            service.request("POST", "/groups/reload")
            served, version = service.get(path)
            world.wait_for_calls(before + 2 * world.calls_per_fetch())
            if version == current:
                quiet += 1  # the kept members did not change: no event is due
                continue
            _, event_id = stream.take(False, "groups")
            check(event_id == version, f"change {step}: an event with id {event_id}, the kept document's version is {version}")
            check(same(stream.documents["groups"], served), f"change {step}: the patched groups are not GET {path}:\n"
                  f"  patched {json.dumps(stream.documents['groups'], ensure_ascii=False)[:600]}\n"
                  f"  served  {json.dumps(served, ensure_ascii=False)[:600]}")
            current = event_id
        counts = stream.counts
        return (f"{partial} partial first documents, then {changes} changes: {counts['patch']} patches"
                f" ({counts['operations']} operations), {counts['snapshot']} snapshots, {quiet} changes the kept members did not show")
    finally:
        stream.close()


def events_stream(world: World, service: Service, changes: int) -> str:
    world.searches["s0"] = [world.item() for _ in range(8)]
    stream = Stream(service, "/events?resource=groups&resource=search&search.q=s0&updates=patch")
    try:
        current = {}
        while len(stream.documents) < 2:
            resource, event_id = stream.take(True)
            current[resource] = version_of(resource, event_id, True)
        expect_current(stream, service, "groups", "/groups", current["groups"], False, 0)
        expect_current(stream, service, "search", "/search?q=s0", current["search"], False, 0)
        query = "s0"
        for step in range(1, changes + 1):
            if world.rng.random() < 0.5:
                before = world.answered
                world.change_groups()
                service.request("POST", "/groups/reload")
                served, version = service.get("/groups")
                world.wait_for_calls(before + 2 * world.calls_per_fetch())
                if version == current["groups"]:
                    continue
                resource, event_id = stream.take(True)
                check(resource == "groups", f"change {step}: an event of {resource}, the groups changed")
                check(version_of("groups", event_id, True) == version, f"change {step}: id {event_id}, the groups are {version}")
                check(version_of("search", event_id, True) == current["search"], f"change {step}: id {event_id} lost the search's version")
                check(same(stream.documents["groups"], served), f"change {step}: the patched groups are not GET /groups")
                current["groups"] = version
            else:
                # Each query answers the previous one's results changed; on /events every new
                # query is news (its events name the query), even with the same results.
                answer = world.search_answer(world.searches[query])
                query = f"s{step}"
                with world.lock:
                    world.searches[query] = answer
                service.request("PUT", f"/streams/{stream.announced['search']}/inputs/q", query.encode())
                resource, event_id = stream.take(True)
                check(resource == "search", f"change {step}: an event of {resource}, the search changed")
                current["search"] = version_of("search", event_id, True)
                expect_current(stream, service, "search", f"/search?q={query}", event_id, True, step)
        counts = stream.counts
        return (f"{changes} changes: {counts['patch']} patches ({counts['operations']} operations, {counts['patch bytes']} bytes),"
                f" {counts['snapshot']} snapshots ({counts['snapshot bytes']} bytes)")
    finally:
        stream.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: a new one, printed)")
    parser.add_argument("--changes", type=int, default=500, help="random changes on each of the two streams")
    arguments = parser.parse_args()
    seed = arguments.seed if arguments.seed is not None else random.randrange(2**32)
    print(f"random changes with seed {seed} (--seed {seed} repeats them)")
    rng = random.Random(seed)
    world = World(rng)
    upstream = Upstream(world)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="tributary-patches-") as directory:
        service = Service(upstream.port, directory)
        try:
            for name, run in (("GET /groups?updates=patch", groups_stream),
                              ("GET /events?resource=groups&resource=search&updates=patch", events_stream),
                              (f"GET /groups?updates=patch&progressive=true&fields={PROJECTION}", projected_stream)):
                try:
                    print(f"  {name}: {run(world, service, arguments.changes)}; every document equal to its JSON GET,"
                          f" every id its ETag")
                    passed += 1
                except Exception as error:  # noqa: BLE001 - every failure becomes one line
                    failed += 1
                    where = traceback.extract_tb(error.__traceback__)[-1]
                    print(f"  FAIL {name}: {error} (line {where.lineno})")
        finally:
            service.stop()
            upstream.stop()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
