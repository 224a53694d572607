#!/usr/bin/env python3
"""The hot path's budgets: counts, not times, checked against Benchmarks/Thresholds/.

    Benchmarks/budgets.py [check]    count, compare, fail on a figure above its threshold
    Benchmarks/budgets.py update     count and write the figures as the new thresholds

Two sets of figures, both counted by valgrind's callgrind from release builds (so the same
binary gives the same figures whatever else the machine does; see Thresholds/README.md):

  groups-n10   instructions and allocations (calls to malloc) per N=10 GET /groups request,
               over 200 requests one after another (Benchmarks/groups-cpu.sh count 10 200)
  sharing      instructions and allocations per request of what part 3 adds to a JSON answer:
               GET /teams/core/groups (a path parameter: route, validation, paths) and GET
               /me/groups with a forwarded Authorization (an identity), each over the demo
               upstream's 10 groups, 200 requests one after another (Benchmarks/sharing-cost.sh,
               ROUNDS=0); the demo's data changes as it runs, which moves them by well under 1 %
  rivers       instructions and allocations per element of Rivers' main operators
               (Benchmarks/RiversCounts), each workload run at two sizes: the difference,
               divided by the difference in elements, is what one more element costs

A figure fails when it is more than TOLERANCE above its threshold; one more than TOLERANCE
below passes with a note to lower the threshold. The profiles stay in .build/budgets/ for a
look with callgrind_annotate. scripts/test runs the check; it needs valgrind, nginx and Go
(the load tools of Benchmarks/load, which write and serve the /groups fixture): without any of
them it fails, saying what is missing.
"""
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOLERANCE = 0.03
REPOSITORY = Path(__file__).resolve().parent.parent
THRESHOLDS = REPOSITORY / "Benchmarks" / "Thresholds"
WORK = REPOSITORY / ".build" / "budgets"
GROUPS_REQUESTS = 200
RIVERS_SIZES = (1000, 2000)
RIVERS_WORKLOADS = (
    "combine-latest", "merge", "flat-map-sequential", "ordered-fan-out", "share-latest",
    "accumulate-latest-many",
)


def run(command, **options):
    return subprocess.run(command, check=True, text=True, capture_output=True, **options)


def build(product):
    # The image's build configuration (the Dockerfile's, scripts/test's): a build with other
    # flags in the same .build would compile every module again, dependencies included.
    command = ["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", product]
    try:
        run(command, cwd=REPOSITORY)
    except subprocess.CalledProcessError as error:
        sys.exit(f"budgets: {' '.join(command)} failed:\n{error.stdout}{error.stderr}")
    return REPOSITORY / ".build" / "release" / product


@functools.cache
def service_binary():
    """TRIBUTARY_BIN, a release binary built already (scripts/test's, the image's build), or
    this build's, made once for every set that needs it."""
    return Path(os.environ["TRIBUTARY_BIN"]) if os.environ.get("TRIBUTARY_BIN") else build("tributary")


def callgrind_counts(profile):
    output = run([sys.executable, str(REPOSITORY / "Benchmarks" / "callgrind_counts.py"), str(profile)]).stdout
    instructions, allocations = output.split()
    return int(instructions), int(allocations)


def groups_figures():
    """Per N=10 /groups request. A budget that cannot be counted is a failure, not a skip."""
    environment = dict(os.environ, CALLGRIND_OUT=str(WORK / "groups.out"),
                       TRIBUTARY_BIN=str(service_binary()))
    command = ["Benchmarks/groups-cpu.sh", "count", "10", str(GROUPS_REQUESTS)]
    try:
        output = run(command, cwd=REPOSITORY, env=environment).stdout
    except subprocess.CalledProcessError as error:
        sys.exit(f"budgets: {' '.join(command)} failed:\n{error.stdout}{error.stderr}")
    match = re.search(r"([\d.]+) instructions/request, ([\d.]+) allocations/request", output)
    profile = re.search(r"^profile: (\S+)", output, re.MULTILINE)
    if not match or not profile:
        sys.exit(f"budgets: no counts in the output of {' '.join(command)}:\n{output}")
    investigate = (f"Benchmarks/groups-cpu.sh count 10 {GROUPS_REQUESTS}; "
                   f"callgrind_annotate --inclusive=yes {profile.group(1)}")
    return {
        "instructions per request": (float(match.group(1)), investigate),
        "allocations per request": (float(match.group(2)), investigate),
    }


def sharing_figures():
    """Per request of a parameterized route and of a forwarded identity (issue 41's part 3 on
    the JSON path), with the plain figures they are compared with."""
    command = ["Benchmarks/sharing-cost.sh"]
    environment = dict(os.environ, ROUNDS="0", COUNT="200", TRIBUTARY_BIN=str(service_binary()))
    try:
        output = run(command, cwd=REPOSITORY, env=environment).stdout
    except subprocess.CalledProcessError as error:
        sys.exit(f"budgets: ROUNDS=0 {' '.join(command)} failed:\n{error.stdout}{error.stderr}")
    counts = {match.group(1): (float(match.group(2)), float(match.group(3))) for match in re.finditer(
        r"^count\s+(\w+)\s+\S+\s+([\d.]+) instructions/request, ([\d.]+) allocations/request", output, re.MULTILINE)}
    if not {"param", "forward"} <= counts.keys():
        sys.exit(f"budgets: no counts in the output of ROUNDS=0 {' '.join(command)}:\n{output}")
    investigate = "ROUNDS=0 Benchmarks/sharing-cost.sh (the phases plain, param, noforward, forward; callgrind)"
    for name, base in (("param", "plain"), ("forward", "noforward")):
        print(f"      {name} against {base}: {counts[name][0] / counts[base][0] - 1:+.1%} instructions per request")
    return {
        "parameterized route instructions per request": (counts["param"][0], investigate),
        "parameterized route allocations per request": (counts["param"][1], investigate),
        "forwarded identity instructions per request": (counts["forward"][0], investigate),
        "forwarded identity allocations per request": (counts["forward"][1], investigate),
    }


def rivers_figures():
    binary = build("RiversCounts")
    # Valgrind 3.19 cannot read Swift 6's DWARF 5: a copy without debug info (symbols kept).
    stripped = WORK / "RiversCounts"
    run(["objcopy", "--strip-debug", str(binary), str(stripped)])
    figures = {}
    for workload in RIVERS_WORKLOADS:
        counted = []
        for size in RIVERS_SIZES:
            profile = WORK / f"rivers-{workload}-{size}.out"
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}",
                       str(stripped), workload, str(size)]
            try:
                run(command)
            except subprocess.CalledProcessError as error:
                sys.exit(f"budgets: {' '.join(command)} failed:\n{error.stdout}{error.stderr}")
            counted.append(callgrind_counts(profile))
        elements = RIVERS_SIZES[1] - RIVERS_SIZES[0]
        investigate = (f"swift build -c release --product RiversCounts; callgrind_annotate --inclusive=yes "
                       f"{profile} (and {WORK}/rivers-{workload}-{RIVERS_SIZES[0]}.out, "
                       f"the same at {RIVERS_SIZES[0]} elements)")
        figures[f"{workload} instructions per element"] = ((counted[1][0] - counted[0][0]) / elements, investigate)
        figures[f"{workload} allocations per element"] = ((counted[1][1] - counted[0][1]) / elements, investigate)
    return figures


def rounded(figure, value):
    return round(value) if "instructions" in figure else round(value, 1)


def read_thresholds(path):
    thresholds = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            figure, value = line.rsplit("\t", 1)
            thresholds[figure] = rounded(figure, float(value))
    return thresholds


def write_thresholds(path, figures):
    lines = [f"# {path.stem}: counted by Benchmarks/budgets.py update; see README.md beside this file",
             "# figure\tcount"]
    lines += [f"{figure}\t{rounded(figure, value)}" for figure, (value, _) in figures.items()]
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path.relative_to(REPOSITORY)}")


def check(name, figures):
    path = THRESHOLDS / f"{name}.tsv"
    if not path.is_file():
        print(f"FAIL: {path.relative_to(REPOSITORY)} is missing: Benchmarks/budgets.py update writes it")
        return 1
    thresholds = read_thresholds(path)
    failures = 0
    for figure in thresholds.keys() - figures.keys():
        print(f"FAIL: {name} {figure}: in {path.relative_to(REPOSITORY)} but no longer counted")
        failures += 1
    for figure, (value, investigate) in figures.items():
        value = rounded(figure, value)
        if figure not in thresholds:
            print(f"FAIL: {name} {figure}: {value:,} counted, but no threshold in {path.relative_to(REPOSITORY)}")
            failures += 1
            continue
        threshold = thresholds[figure]
        limit = threshold * (1 + TOLERANCE)
        change = f"{(value - threshold) / threshold:+.1%}" if threshold else f"{value - threshold:+}"
        if value > limit:
            print(f"FAIL: {name} {figure}: {value:,} > {limit:,.1f} (threshold {threshold:,} "
                  f"+{TOLERANCE:.0%}; {change}).\n      Investigate: {investigate}\n"
                  f"      If the rise is wanted: Benchmarks/budgets.py update, and say why in the commit.")
            failures += 1
        elif value < threshold * (1 - TOLERANCE):
            print(f"ok:   {name} {figure}: {value:,} ({change} of {threshold:,}): better; lower the "
                  f"threshold with Benchmarks/budgets.py update so that it guards the new figure")
        else:
            print(f"ok:   {name} {figure}: {value:,} ({change} of {threshold:,})")
    return failures


def main(arguments):
    mode = arguments[0] if arguments else "check"
    if mode not in ("check", "update") or len(arguments) > 1:
        sys.exit(__doc__)
    for tool in ("valgrind", "callgrind_control", "objcopy"):
        if not shutil.which(tool):
            sys.exit(f"budgets: {tool} is missing (Debian: valgrind, binutils)")
    WORK.mkdir(parents=True, exist_ok=True)
    sets = {"groups-n10": groups_figures(), "sharing": sharing_figures(), "rivers": rivers_figures()}
    if mode == "update":
        for name, figures in sets.items():
            write_thresholds(THRESHOLDS / f"{name}.tsv", figures)
        return
    failures = sum(check(name, figures) for name, figures in sets.items())
    if failures:
        sys.exit(f"budgets: {failures} figure(s) over their thresholds (Benchmarks/Thresholds/README.md)")
    print(f"budgets: every figure within +{TOLERANCE:.0%} of its threshold")


if __name__ == "__main__":
    main(sys.argv[1:])
