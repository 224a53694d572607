"""What scripts/kubernetes-check asks of Python (run with the interpreter of scripts/python-env),
after kubernetes-validate has held every manifest of deploy/kubernetes/ to the schemas.

    kubernetes_check.py [BINARY]

1. Every file parses as YAML, and every document in it is a resource (apiVersion, kind,
   metadata.name): the schema check passes an empty document and only warns on a kind it
   does not know.
2. The manifests hold together where no schema looks: the Service and the PodDisruptionBudget
   select the Deployment's pods; TRIBUTARY_CONFIG names a key of the ConfigMap where it is
   mounted; the probes ask /healthz (liveness) and /readyz (readiness) on the port the
   configuration listens on; the pod runs as the Dockerfile's USER, locked down; the grace
   period covers the preStop pause and server.shutdownTimeout; every Secret key the pod reads
   is in the `kubectl create secret` command the Deployment's header documents; every ${VAR}
   of the configuration is in the pod's environment; the image is the one compose.yaml builds.
3. With BINARY (the release build): the ConfigMap's configuration, with the pod's arguments
   and environment (the Secret's values replaced by stand-ins), is loaded by the service
   itself: it must start, answer the liveness probe, turn ready once it joined its fleet on
   a redis-server started here, and exit 0 on SIGTERM within the grace period less the
   preStop pause. Loopback only: the service listens on 127.0.0.1, Redis too, and the OTLP
   endpoint is a loopback port where nothing listens. Every process is stopped by its PID.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFESTS = os.path.join(ROOT, "deploy", "kubernetes")
NAME = "tributary"

# Stand-ins for the Secret's values: shaped like real ones, obviously not.
STAND_INS = {
    "cluster-secret": "kubernetes-check-stand-in-cluster-secret",
    "admin-token": "kubernetes-check-stand-in-admin-token",
    "tasks-token": "kubernetes-check-stand-in-tasks-token",
    "otlp-headers": "authorization=Bearer kubernetes-check-stand-in",
}

failures: list[str] = []


def check(condition: bool, message: str) -> bool:
    if not condition:
        failures.append(message)
    return condition


def fail_now() -> None:
    if failures:
        for message in failures:
            print(f"kubernetes-check: {message}", file=sys.stderr)
        print(f"kubernetes-check: FAILED ({len(failures)} problem(s))", file=sys.stderr)
        sys.exit(1)


def seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(duration))
    if not match:
        raise SystemExit(f"kubernetes-check: cannot read the duration {duration!r}")
    return float(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def load_documents() -> list[tuple[str, dict]]:
    files = sorted(glob.glob(os.path.join(MANIFESTS, "**", "*.yaml"), recursive=True))
    check(bool(files), f"no manifest in {MANIFESTS}")
    documents = []
    for path in files:
        relative = os.path.relpath(path, ROOT)
        try:
            with open(path, encoding="utf-8") as f:
                loaded = list(yaml.safe_load_all(f))
        except yaml.YAMLError as error:
            check(False, f"{relative}: not YAML: {error}")
            continue
        for index, document in enumerate(loaded):
            where = f"{relative}, document {index + 1}"
            if not check(isinstance(document, dict), f"{where}: empty, or not a mapping"):
                continue
            for key in ("apiVersion", "kind"):
                check(isinstance(document.get(key), str) and document[key] != "", f"{where}: no {key}")
            check(isinstance((document.get("metadata") or {}).get("name"), str), f"{where}: no metadata.name")
            documents.append((relative, document))
    return documents


def find(documents: list[tuple[str, dict]], kind: str, name: str) -> dict:
    matches = [d for path, d in documents if d.get("kind") == kind and d["metadata"].get("name") == name
               and not path.startswith("deploy/kubernetes/examples/")]
    check(len(matches) == 1, f"expected one {kind} {name} in deploy/kubernetes/, found {len(matches)}")
    return matches[0] if matches else {}


def selects(selector: dict, labels: dict) -> bool:
    wanted = (selector or {}).get("matchLabels", selector or {})
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def dockerfile_user() -> str:
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
        users = re.findall(r"^USER\s+(\S+)", f.read(), flags=re.MULTILINE)
    return users[-1] if users else ""


def compose_image() -> str:
    with open(os.path.join(ROOT, "deploy", "compose.yaml"), encoding="utf-8") as f:
        return ((yaml.safe_load(f).get("x-image") or {}).get("image")) or ""


def documented_secret_keys() -> set[str]:
    with open(os.path.join(MANIFESTS, "deployment.yaml"), encoding="utf-8") as f:
        header = "".join(line for line in f if line.startswith("#"))
    return set(re.findall(r"--from-literal=([a-z0-9-]+)=", header))


def consistency(documents: list[tuple[str, dict]]) -> tuple[dict, str, float]:
    """The cross-checks of part 2; returns the pod's container, the configuration's text and
    the time SIGTERM leaves the service to exit (the grace period less the preStop pause)."""
    deployment = find(documents, "Deployment", NAME)
    configmap = find(documents, "ConfigMap", f"{NAME}-config")
    service = find(documents, "Service", NAME)
    budget = find(documents, "PodDisruptionBudget", NAME)
    fail_now()

    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"].get("labels", {})
    check(spec.get("replicas", 1) >= 2, "the Deployment runs a fleet: replicas ≥ 2")
    check(selects(spec["selector"], labels), "the Deployment's selector does not match its pods' labels")
    check(selects(service["spec"].get("selector", {}), labels), "the Service does not select the Deployment's pods")
    check(selects(budget["spec"].get("selector", {}), labels), "the PodDisruptionBudget does not select the Deployment's pods")

    containers = [c for c in pod["containers"] if c["name"] == NAME]
    check(len(containers) == 1, f"no container named {NAME}")
    fail_now()
    container = containers[0]
    env = {e["name"]: e for e in container.get("env", [])}
    check(container.get("image") == compose_image(),
          f"image {container.get('image')!r} is not the one deploy/compose.yaml builds ({compose_image()!r})")
    for variable in ("TRIBUTARY_REDIS_URL", "TRIBUTARY_CLUSTER_SECRET"):
        check(variable in env, f"{variable} is not set: replicas without it are not a fleet")

    # The configuration: where TRIBUTARY_CONFIG points, a key of the ConfigMap mounted there.
    config_path = env.get("TRIBUTARY_CONFIG", {}).get("value", "")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [m for m in container.get("volumeMounts", [])
              if volumes.get(m["name"], {}).get("configMap", {}).get("name") == configmap["metadata"]["name"]]
    check(len(mounts) == 1, "the ConfigMap is not mounted once in the container")
    fail_now()
    mount = mounts[0]
    check(mount.get("readOnly") is True, "the configuration is mounted read-only")
    check("subPath" not in mount, "a subPath mount never sees an edited ConfigMap: mount the directory")
    check(os.path.dirname(config_path) == mount["mountPath"].rstrip("/"),
          f"TRIBUTARY_CONFIG {config_path!r} is not in the ConfigMap's mount {mount['mountPath']!r}")
    key = os.path.basename(config_path)
    text = configmap.get("data", {}).get(key)
    check(isinstance(text, str), f"the ConfigMap has no key {key!r} (TRIBUTARY_CONFIG)")
    fail_now()
    configuration = yaml.safe_load(text)
    check(isinstance(configuration, dict), "the ConfigMap's configuration is not a YAML mapping")
    fail_now()

    # Probes and ports: the port the configuration listens on.
    server = configuration.get("server", {})
    listen = env.get("TRIBUTARY_LISTEN", {}).get("value") or server.get("listen", "")
    port = int(str(listen).rsplit(":", 1)[-1]) if ":" in str(listen) else 0
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    check(port in ports.values(), f"the configuration listens on {listen!r}, not on a containerPort {sorted(ports.values())}")
    check(str(listen).startswith("0.0.0.0:") or str(listen).startswith("[::]:"),
          f"server.listen {listen!r} must listen on every address of the pod")

    def probe(name: str, path: str) -> None:
        get = (container.get(name) or {}).get("httpGet", {})
        check(get.get("path") == path, f"{name} asks {get.get('path')!r}, not {path}")
        target = get.get("port")
        check(ports.get(target, target) == port, f"{name} asks port {target!r}, not the one the service listens on ({port})")

    probe("livenessProbe", "/healthz")
    probe("readinessProbe", "/readyz")
    if "startupProbe" in container:
        probe("startupProbe", "/healthz")
    for service_port in service["spec"].get("ports", []):
        target = service_port.get("targetPort")
        check(ports.get(target, target) == port, f"the Service's targetPort {target!r} is not the port the service listens on")
    annotations = spec["template"]["metadata"].get("annotations", {})
    if "prometheus.io/port" in annotations:
        check(int(annotations["prometheus.io/port"]) == port, "prometheus.io/port is not the port the service listens on")
        check(annotations.get("prometheus.io/path") == "/metrics", "prometheus.io/path is not /metrics")

    # Locked down, as the Dockerfile's user.
    user, _, group = dockerfile_user().partition(":")
    pod_security = pod.get("securityContext", {})
    security = {**pod_security, **container.get("securityContext", {})}
    check(str(security.get("runAsUser")) == user and str(security.get("runAsGroup")) == group,
          f"the pod runs as {security.get('runAsUser')}:{security.get('runAsGroup')}, the Dockerfile's USER is {user}:{group}")
    check(security.get("runAsNonRoot") is True, "runAsNonRoot is not true")
    check(security.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem is not true")
    check(security.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
    check(security.get("capabilities", {}).get("drop") == ["ALL"], "capabilities do not drop ALL")
    check(not security.get("capabilities", {}).get("add"), "capabilities are added")
    check(security.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccompProfile is not RuntimeDefault")
    check(pod.get("enableServiceLinks") is False,
          "enableServiceLinks must be false: a Service named tributary-upstream-… would make a TRIBUTARY_UPSTREAM_… variable")

    # Shutdown: the grace period covers the preStop pause and the service's own drain.
    pre_stop = (container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")) or []
    pause = float(pre_stop[1]) if len(pre_stop) == 2 and pre_stop[0] == "sleep" else 0.0
    drain = seconds(server.get("shutdownTimeout", "10s"))
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(grace >= pause + drain + 1,
          f"terminationGracePeriodSeconds {grace} < preStop {pause:g} s + server.shutdownTimeout {drain:g} s + 1 s to exit")

    # Secrets: the keys the pod reads are the ones the header's command creates; ${VAR} is set.
    documented = documented_secret_keys()
    for name, entry in env.items():
        reference = entry.get("valueFrom", {}).get("secretKeyRef")
        if reference:
            check(reference["name"] == NAME, f"{name} reads Secret {reference['name']!r}, not {NAME!r}")
            check(reference["key"] in documented,
                  f"{name} reads key {reference['key']!r}, which deployment.yaml's `kubectl create secret` does not create")
    for variable in sorted(set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text))):
        check(variable in env, f"the configuration expands ${{{variable}}}, which the pod's environment lacks")
    fail_now()
    return container, text, grace - pause


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def pod_environment(container: dict, overrides: dict[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet makes it, Secret values as stand-ins."""
    environment: dict[str, str] = {}
    for entry in container.get("env", []):
        name, source = entry["name"], entry.get("valueFrom", {})
        if "value" in entry:
            # $(VAR) names an earlier variable, as the kubelet expands it.
            environment[name] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                                       lambda m: environment.get(m.group(1), m.group(0)), entry["value"])
        elif "secretKeyRef" in source:
            environment[name] = STAND_INS.get(source["secretKeyRef"]["key"], "stand-in")
        elif "fieldRef" in source:
            environment[name] = f"stand-in-{source['fieldRef']['fieldPath'].replace('.', '-')}"
    environment.update(overrides)
    return environment


def run_service(binary: str, container: dict, text: str, grace: float) -> None:
    redis_server = shutil.which("redis-server")
    check(redis_server is not None, "no redis-server to join the fleet on (scripts/test installs it)")
    fail_now()
    work = tempfile.mkdtemp(prefix="kubernetes-check.")
    processes: list[subprocess.Popen] = []
    log_path = os.path.join(work, "service.log")
    try:
        config = os.path.join(work, "tributary.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(text)
        redis_port, port = free_port(), free_port()
        processes.append(subprocess.Popen(
            [redis_server, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        environment = pod_environment(container, {
            "TRIBUTARY_CONFIG": config,
            "TRIBUTARY_LISTEN": f"127.0.0.1:{port}",
            "TRIBUTARY_REDIS_URL": f"redis://127.0.0.1:{redis_port}",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",   # nothing listens there
        })
        environment["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
        with open(log_path, "w", encoding="utf-8") as log:
            service = subprocess.Popen([binary, *container.get("args", [])], env=environment, cwd=work,
                                       stdout=log, stderr=subprocess.STDOUT)
        processes.append(service)
        base = f"http://127.0.0.1:{port}"

        def wait_for(path: str, within: float) -> bool:
            deadline = time.monotonic() + within
            while time.monotonic() < deadline:
                if service.poll() is not None:
                    return False
                if status(base + path) == 200:
                    return True
                time.sleep(0.1)
            return False

        if not wait_for("/healthz", 20):
            exited = service.poll()
            check(False, "the service did not start with the ConfigMap's configuration and the pod's environment ("
                  + (f"it exited with status {exited}: its log is above)" if exited is not None
                     else "liveness /healthz not 200 within 20 s)"))
            return
        print("kubernetes-check: the release binary loads the ConfigMap's configuration; /healthz 200")
        if not check(wait_for("/readyz", 10), "/readyz did not turn 200 within 10 s of a redis-server being there"):
            return
        print("kubernetes-check: /readyz 200 once it joined its fleet (redis-server on loopback)")
        service.send_signal(signal.SIGTERM)
        try:
            code = service.wait(timeout=grace)
            check(code == 0, f"SIGTERM: exit status {code}, not 0")
            print(f"kubernetes-check: SIGTERM: exit 0 within the grace period less the preStop pause ({grace:g} s)")
        except subprocess.TimeoutExpired:
            check(False, f"SIGTERM: still running after {grace:g} s, the grace period less the preStop pause")
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.kill()
                process.wait()
        if failures:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                print(f.read()[-4000:], file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    documents = load_documents()
    fail_now()
    print(f"kubernetes-check: {len(documents)} resources parse, each with apiVersion, kind and a name")
    container, text, exit_within = consistency(documents)
    print("kubernetes-check: the Deployment, ConfigMap, Service and PodDisruptionBudget hold together")
    if len(sys.argv) > 1:
        run_service(os.path.abspath(sys.argv[1]), container, text, exit_within)
        fail_now()


if __name__ == "__main__":
    main()
