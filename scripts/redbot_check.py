"""REDbot (PyPI `redbot`, an HTTP linter) run against every endpoint of a running Tributary;
exits 1 if any answer gets a problem-level ("bad") note. Used by scripts/redbot-check.

    python redbot_check.py http://127.0.0.1:PORT

Event streams are left out: REDbot reads an answer to its end, and a stream has none (their
headers are checked by the project's own tests). Each check's notes are printed with their
level, so a warning is visible even though only a problem fails the run.
"""
from __future__ import annotations

import subprocess
import sys
from configparser import ConfigParser

import thor
from httplint.note import levels
from redbot.resource import HttpResource

# (method, path, request headers): the JSON of each resource (plain and asking for gzip),
# the operations endpoints, a reload, and error answers of a resource URL and of the others.
CHECKS = [
    ("GET", "/groups", []),
    ("GET", "/rows", []),
    ("GET", "/rows", [("Accept-Encoding", "gzip")]),
    ("GET", "/search?q=swift", []),
    ("GET", "/search?q=swift", [("Accept-Encoding", "gzip")]),
    ("HEAD", "/rows", []),
    ("GET", "/healthz", []),
    ("GET", "/readyz", []),
    ("GET", "/metrics", []),
    ("GET", "/", []),
    ("GET", "/openapi.json", []),
    ("POST", "/groups/reload", []),
    ("GET", "/search?q=" + "x" * 300, []),
    ("GET", "/nowhere", []),
    ("POST", "/streams/00000000000000000000000000000000/triggers/reload", []),
]


def check(base: str, method: str, path: str, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (level, summary) of every note REDbot makes on one answer, subnotes included."""
    parser = ConfigParser()
    parser.read_dict({"redbot": {"enable_local_access": "True"}})
    resource = HttpResource(parser["redbot"])
    resource.set_request(base + path, method=method, headers=headers)

    @thor.events.on(resource)
    def check_done() -> None:
        thor.stop()

    resource.check()
    thor.run()
    if resource.fetch_error is not None:
        return [(levels.BAD.value, f"fetch error: {resource.fetch_error.desc}")]
    notes = []
    for note in resource.response.notes:
        notes.append((note.level.value, note.summary))
        notes += [(sub.level.value, "  " + sub.summary) for sub in note.subnotes]
    return notes


def main() -> int:
    base = sys.argv[1].rstrip("/")
    if len(sys.argv) > 2:
        # One check, in a process of its own: thor's loop and connection pool are global, and
        # a second run in one process could stall on a connection the first left behind.
        method, path, headers = CHECKS[int(sys.argv[2])]
        for level, summary in check(base, method, path, headers):
            print(f"{level}\t{summary}")
        return 0
    problems = 0
    for index, (method, path, headers) in enumerate(CHECKS):
        shown = path if len(path) < 60 else path[:57] + "..."
        print(f"{method} {shown} {' '.join(f'{n}: {v}' for n, v in headers)}".rstrip())
        one = subprocess.run([sys.executable, __file__, base, str(index)], capture_output=True, text=True, timeout=60)
        lines = [line.split("\t", 1) for line in one.stdout.splitlines() if "\t" in line]
        if one.returncode != 0 or not lines:
            lines = [[levels.BAD.value, f"the check failed: {one.stderr.strip()[-500:]}"]]
        for level, summary in lines:
            print(f"  [{level}] {summary}")
            problems += level == levels.BAD.value
    print(f"redbot-check: {len(CHECKS)} answers, {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
