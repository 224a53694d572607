#!/usr/bin/env python3
"""Traces over OTLP/HTTP, as a collector receives them from the release binary.

A collector here (POST /v1/traces and /v1/metrics on 127.0.0.1, each export decoded with
opentelemetry-proto, PyPI's generated OTLP classes), a scripted upstream that records every
call's path and headers, and the release binary started with OTEL_EXPORTER_OTLP_ENDPOINT
pointing at the collector. What it proves (docs/operations.md, "Traces"):

1. GET /groups with a sampled `traceparent`: one SERVER span `GET /groups`, the caller's
   span its parent, `http.route` and `http.response.status_code`; one CLIENT span per upstream
   call as its children, `tributary.call` list or detail, `url.path` the path the upstream
   got; each call's `traceparent` names its CLIENT span.
2. A parameterized route: `GET /teams/{team}/groups`, its CLIENT spans under it.
3. A live stream: its SERVER span reaches the collector while the stream is open (it ends at
   the first event), and each refresh is a root span `refresh groups` with its calls.
4. An unsampled `traceparent` (flags 00): nothing of that trace is exported, and the
   upstream gets flags 00.
5. No secret in anything the collector received: not the upstream's credential header, not a
   client's forwarded `Authorization`, not an `access_token`, not a whole stream id.
6. A collector that is down, and one that never answers: every request is answered, and the
   spans lost are counted in `tributary_otlp_dropped_spans_total`.
7. `OTEL_METRICS_EXPORTER=otlp`: `/metrics`' instruments reach the collector too.

Every wait is for a condition (bounded, so a failure is reported rather than hung on).
Prints what it checks, then `N passed, M failed`; exits non-zero on a failure. Run it with the
project's Python tools: `"$(scripts/python-env)" Tests/Clients/otlp_traces.py`.
Environment: TRIBUTARY_BIN (default: .build/release/tributary).
"""
from __future__ import annotations

import gzip
import http.client
import http.server
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("TRIBUTARY_BIN", os.path.join(ROOT, ".build", "release", "tributary"))
#: The longest any awaited condition may take: spans are batched every OTEL_BSP_SCHEDULE_DELAY
#: (100 ms here); a failing check says what it saw instead of hanging.
WAIT = 20.0
GROUPS = 3
SERVICE_TOKEN = "svc-" + secrets.token_hex(12)       # the upstream's configured credential
CLIENT_TOKEN = "client-" + secrets.token_hex(12)     # a client's Authorization, forwarded


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def await_condition(what: str, condition: Callable[[], bool], cond: threading.Condition, timeout: float = WAIT) -> None:
    """Until `condition` holds, woken by `cond`'s notifications."""
    with cond:
        if not cond.wait_for(condition, timeout):
            raise Failure(f"not within {timeout:g} s: {what}")


def poll_until(what: str, condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Until `condition` holds, asked again every 100 ms (for what no one notifies: /metrics)."""
    idle = threading.Event()
    for _ in range(int(timeout * 10)):
        if condition():
            return
        idle.wait(0.1)
    raise Failure(f"not within {timeout:g} s: {what}")


# ---------------------------------------------------------------------------- loopback servers

def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.ThreadingHTTPServer:
    """`handler` on a free port of 127.0.0.1, a thread per request, served from a thread of its own."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server


def url_of(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


# ---------------------------------------------------------------------------- the collector

@dataclass
class Span:
    trace_id: str
    span_id: str
    parent: str
    name: str
    kind: int
    attributes: dict


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1. `mode`: `ok` answers 200; `stuck` never answers (the
    request is held until the collector closes)."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.spans: list[Span] = []
        self.metric_names: set[str] = set()
        self.bodies: list[bytes] = []     # every export, decompressed: what the secret check reads
        self.cond = threading.Condition()
        self.release = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                    body = gzip.decompress(body)
                if owner.mode == "stuck":
                    owner.release.wait(60)
                    return
                with owner.cond:
                    owner.bodies.append(body)
                    if self.path.startswith("/v1/traces"):
                        owner.spans += decode_spans(body)
                    elif self.path.startswith("/v1/metrics"):
                        request = ExportMetricsServiceRequest.FromString(body)
                        for rm in request.resource_metrics:
                            for sm in rm.scope_metrics:
                                owner.metric_names.update(m.name for m in sm.metrics)
                    owner.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = serve(Handler)

    @property
    def url(self) -> str:
        return url_of(self.server)

    def trace(self, trace_id: str) -> list[Span]:
        with self.cond:
            return [s for s in self.spans if s.trace_id == trace_id]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def decode_spans(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest.FromString(body)
    spans = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                attributes = {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in s.attributes}
                spans.append(Span(s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name, s.kind, attributes))
    return spans


SERVER, CLIENT, INTERNAL = ProtoSpan.SPAN_KIND_SERVER, ProtoSpan.SPAN_KIND_CLIENT, ProtoSpan.SPAN_KIND_INTERNAL


# ---------------------------------------------------------------------------- the upstream

class Upstream:
    """A scripted upstream of GROUPS groups, with per-group metadata, for /groups and
    /teams/{team}/groups; records (path, headers) of every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.cond = threading.Condition()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                with owner.cond:
                    owner.calls.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                    owner.cond.notify_all()
                path = self.path.split("?")[0]
                if re.fullmatch(r"(/teams/[^/]+)?/groups", path):
                    body = {"result": [{"id": f"g{i}", "name": f"group {i}"} for i in range(GROUPS)]}
                elif re.fullmatch(r"(/teams/[^/]+)?/groups/g\d+/metadata", path):
                    body = {"result": {"taskCount": 1}}
                else:
                    body = {"error": "not found"}
                data = json.dumps(body).encode()
                self.send_response(200 if "error" not in body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = serve(Handler)

    @property
    def url(self) -> str:
        return url_of(self.server)

    def calls_of(self, trace_id: str) -> list[tuple[str, dict]]:
        with self.cond:
            return [c for c in self.calls if trace_id in c[1].get("traceparent", "")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------------------- the service

CONFIG = """
server:
  listen: 127.0.0.1:0
  workers: 2
  logLevel: info
upstreams:
  tasks:
    url: {upstream}
    headers: {{Authorization: "Bearer {service_token}"}}
    revalidate: false
  accounts:
    url: {upstream}
    forward: [Authorization]
resources:
  groups:
    kind: list
    upstream: tasks
    list: {{path: /groups, items: result, id: id}}
    details: {{path: "/groups/{{id}}/metadata", value: result}}
    refreshInterval: 60s
    coalesce: false
  teamgroups:
    kind: list
    upstream: tasks
    route: /teams/{{team}}/groups
    parameters:
      team: {{pattern: "^[a-z0-9-]{{1,40}}$"}}
    list: {{path: "/teams/{{team}}/groups", items: result, id: id}}
    details: {{path: "/teams/{{team}}/groups/{{id}}/metadata", value: result}}
  mine:
    kind: list
    upstream: accounts
    list: {{path: /groups, items: result, id: id}}
    details: {{path: "/groups/{{id}}/metadata", value: result}}
"""


class Service:
    """The release binary on a free loopback port, exporting to `collector_url`; stopped by PID."""

    def __init__(self, upstream: Upstream, collector_url: str, extra_env: dict | None = None) -> None:
        check(os.access(BINARY, os.X_OK), f"no binary at {BINARY} (swift build -c release --product tributary)")
        self.config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.config.write(CONFIG.format(upstream=upstream.url, service_token=SERVICE_TOKEN))
        self.config.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRIBUTARY_"))}
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": collector_url, "OTEL_BSP_SCHEDULE_DELAY": "100"})
        env.update(extra_env or {})
        self.process = subprocess.Popen(
            [BINARY, "serve", "--config", self.config.name], cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port: int | None = None
        self.log: list[str] = []
        ready = threading.Event()

        def read_log() -> None:
            for line in self.process.stderr:
                self.log.append(line)
                found = re.search(r"address=127\.0\.0\.1:(\d+)", line)
                if found and "listening" in line and self.port is None:
                    self.port = int(found.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read_log, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            self.stop()
            raise Failure("the service did not start: " + "".join(self.log[-5:]))

    def get(self, path: str, headers: dict | None = None) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("GET", path, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def metric(self, name: str) -> float:
        status, body = self.get("/metrics")
        check(status == 200, f"/metrics answered {status}")
        total = 0.0
        for line in body.decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        os.unlink(self.config.name)


@contextmanager
def running(collector_mode: str = "ok", extra_env: dict | None = None, collector_url: str | None = None
            ) -> Iterator[tuple[Service, Upstream, Collector]]:
    upstream, collector = Upstream(), Collector(collector_mode)
    service = None
    try:
        service = Service(upstream, collector_url or collector.url, extra_env)
        yield service, upstream, collector
    finally:
        if service:
            service.stop()
        collector.close()
        upstream.close()


def sampled() -> tuple[str, str, dict]:
    trace, parent = secrets.token_hex(16), secrets.token_hex(8)
    return trace, parent, {"traceparent": f"00-{trace}-{parent}-01"}


def parent_id(traceparent: str) -> str:
    return traceparent.split("-")[2]


# ---------------------------------------------------------------------------- the checks

def request_tree(service: Service, upstream: Upstream, collector: Collector, path: str, route: str) -> None:
    trace, parent, headers = sampled()
    status, _ = service.get(path, headers)
    check(status == 200, f"GET {path} answered {status}")
    calls = upstream.calls_of(trace)
    check(len(calls) == GROUPS + 1, f"the upstream got {len(calls)} calls of the trace, expected {GROUPS + 1}")

    def complete() -> bool:
        spans = [s for s in collector.spans if s.trace_id == trace]
        return any(s.kind == SERVER for s in spans) and sum(s.kind == CLIENT for s in spans) >= len(calls)
    await_condition(f"the SERVER span and {len(calls)} CLIENT spans of GET {path}", complete, collector.cond)
    spans = collector.trace(trace)
    servers = [s for s in spans if s.kind == SERVER]
    check(len(servers) == 1, f"{len(servers)} SERVER spans")
    server = servers[0]
    check(server.name == f"GET {route}", f"the SERVER span is named {server.name!r}, expected 'GET {route}'")
    check(server.parent == parent, f"the SERVER span's parent is {server.parent!r}, not the caller's {parent}")
    check(server.attributes.get("http.route") == route, f"http.route is {server.attributes.get('http.route')!r}")
    check(server.attributes.get("http.response.status_code") == 200, f"status attribute {server.attributes}")
    clients = [s for s in spans if s.kind == CLIENT]
    check(all(s.parent == server.span_id for s in clients), "a CLIENT span is not a child of the SERVER span")
    check(len(clients) == len(calls), f"{len(clients)} CLIENT spans for {len(calls)} upstream calls")
    check(sorted(s.attributes.get("tributary.call") for s in clients) == ["detail"] * GROUPS + ["list"],
          f"tributary.call of the CLIENT spans: {sorted(str(s.attributes.get('tributary.call')) for s in clients)}")
    check({s.attributes.get("url.path") for s in clients} == {c[0].split("?")[0] for c in calls},
          "the CLIENT spans' url.path are not the paths the upstream got")
    check(all(s.attributes.get("server.address") == "127.0.0.1" for s in clients), "server.address")
    check(all(s.attributes.get("http.response.status_code") == 200 for s in clients), "a CLIENT span without status 200")
    named = sorted(parent_id(c[1]["traceparent"]) for c in calls)
    check(named == sorted(s.span_id for s in clients),
          "the traceparent of each upstream call does not name its CLIENT span")


def groups_tree(service: Service, upstream: Upstream, collector: Collector) -> None:
    request_tree(service, upstream, collector, "/groups", "/groups")


def parameterized_tree(service: Service, upstream: Upstream, collector: Collector) -> None:
    request_tree(service, upstream, collector, "/teams/core/groups", "/teams/{team}/groups")


def stream_and_refresh(service: Service, upstream: Upstream, collector: Collector) -> None:
    trace, parent, headers = sampled()
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=WAIT)
    try:
        connection.request("GET", "/groups", headers={**headers, "Accept": "text/event-stream"})
        response = connection.getresponse()
        check(response.status == 200, f"the stream answered {response.status}")
        # The first event, then the stream stays open while the SERVER span is awaited.
        buffer = b""
        while b"event: snapshot" not in buffer:
            chunk = response.read1(4096)
            check(chunk != b"", "the stream ended before its first snapshot")
            buffer += chunk
        await_condition("the stream's SERVER span, while the stream is open",
                        lambda: any(s.trace_id == trace and s.kind == SERVER for s in collector.spans), collector.cond)
        server = next(s for s in collector.trace(trace) if s.kind == SERVER)
        check(server.name == "GET /groups" and server.parent == parent, f"the stream's SERVER span: {server}")

        def refresh_with_calls() -> bool:
            roots = [s for s in collector.spans if s.name == "refresh groups" and not s.parent]
            return any(sum(c.parent == r.span_id and c.kind == CLIENT for c in collector.spans) == GROUPS + 1 for r in roots)
        await_condition("a root span `refresh groups` with its list and detail calls as children", refresh_with_calls,
                        collector.cond)
    finally:
        connection.close()


def unsampled(service: Service, upstream: Upstream, collector: Collector) -> None:
    trace, parent = secrets.token_hex(16), secrets.token_hex(8)
    status, _ = service.get("/groups", {"traceparent": f"00-{trace}-{parent}-00"})
    check(status == 200, f"GET /groups answered {status}")
    calls = upstream.calls_of(trace)
    check(calls and all(c[1]["traceparent"].endswith("-00") for c in calls), "the upstream did not get flags 00")
    # A sampled request after it: once its spans are in, the unsampled ones would be too.
    later, _, headers = sampled()
    service.get("/groups", headers)
    await_condition("the spans of a sampled request after it", lambda: any(s.trace_id == later for s in collector.spans),
                    collector.cond)
    check(collector.trace(trace) == [], f"{len(collector.trace(trace))} spans of an unsampled trace were exported")


def no_secrets(service: Service, upstream: Upstream, collector: Collector) -> None:
    trace, _, headers = sampled()
    access_token = "at-" + secrets.token_hex(12)
    stream_id = secrets.token_hex(16)
    service.get(f"/mine?access_token={access_token}", {**headers, "Authorization": f"Bearer {CLIENT_TOKEN}"})
    service.get(f"/streams/{stream_id}/triggers/loadMore", headers)
    service.get("/groups", headers)
    check(any(CLIENT_TOKEN in c[1].get("authorization", "") for c in upstream.calls_of(trace)),
          "the client's Authorization was not forwarded: the check would prove nothing")
    await_condition("the three requests' SERVER spans",
                    lambda: sum(s.trace_id == trace and s.kind == SERVER for s in collector.spans) >= 3, collector.cond)
    with collector.cond:
        everything = b"".join(collector.bodies)
    for name, secret in [("the upstream's credential", SERVICE_TOKEN), ("a forwarded Authorization", CLIENT_TOKEN),
                         ("an access_token", access_token), ("a whole stream id", stream_id)]:
        check(secret.encode() not in everything, f"{name} reached the collector")


def run_collector_down() -> None:
    # A port nothing listens on: each export fails at once.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with running(collector_url=url, extra_env={"OTEL_BSP_EXPORT_TIMEOUT": "1000"}) as (service, _, collector):
        for _ in range(20):
            status, _ = service.get("/groups", sampled()[2])
            check(status == 200, f"GET /groups answered {status} while the collector is down")
        poll_until("tributary_otlp_dropped_spans_total counts the spans of the failed exports",
                   lambda: service.metric("tributary_otlp_dropped_spans_total") > 0)


def run_collector_stuck() -> None:
    env = {"OTEL_BSP_MAX_QUEUE_SIZE": "16", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8", "OTEL_BSP_EXPORT_TIMEOUT": "30000"}
    with running("stuck", extra_env=env) as (service, _, _):
        for _ in range(100):
            status, _ = service.get("/groups", sampled()[2])
            check(status == 200, f"GET /groups answered {status} while the collector does not answer")
        poll_until("tributary_otlp_dropped_spans_total counts what the full queue dropped",
                   lambda: service.metric("tributary_otlp_dropped_spans_total") > 0)


def run_metrics() -> None:
    env = {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "200"}
    with running(extra_env=env) as (service, _, collector):
        service.get("/groups")
        await_condition("tributary_http_requests_total exported over OTLP",
                        lambda: "tributary_http_requests_total" in collector.metric_names, collector.cond)


def main() -> int:
    passed = failed = 0

    def report(name: str, run: Callable[[], None]) -> None:
        nonlocal passed, failed
        try:
            run()
            passed += 1
            print(f"PASS {name}")
        except Exception as error:  # noqa: BLE001 - every failure is reported, then the next check runs
            failed += 1
            print(f"FAIL {name}: {error}")
            if not isinstance(error, Failure):
                traceback.print_exc()

    with running() as (service, upstream, collector):
        for check_ in (groups_tree, parameterized_tree, stream_and_refresh, unsampled, no_secrets):
            report(check_.__name__, lambda: check_(service, upstream, collector))
    report("collector_down", run_collector_down)
    report("collector_stuck", run_collector_stuck)
    report("metrics_over_otlp", run_metrics)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
