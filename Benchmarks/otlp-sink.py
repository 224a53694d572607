#!/usr/bin/env python3
"""An OTLP/HTTP sink for Benchmarks/tracing-cost.sh: on 127.0.0.1:PORT it reads every POST
(traces, metrics) whole and answers 200 at once, so the service's exporter does its real work
and is never held up by a slow reader. On SIGTERM it prints how many exports and bytes it got.

    python3 Benchmarks/otlp-sink.py PORT
"""
import http.server
import signal
import sys
import threading

exports = received = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        global exports, received
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with lock:
            exports += 1
            received += len(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def report(*_) -> None:
    print(f"{exports} exports, {received} bytes", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, report)
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
