# syntax=docker/dockerfile:1
#
# Tributary's container image: a static-stdlib release build on the official Swift image, run
# on debian:bookworm-slim with only the shared libraries the binary links and CA certificates.
#
#   docker build -t tributary .
#   docker run --rm -p 8080:8080 tributary demo         # built-in demo upstream, nothing else needed
#   docker run --rm -p 8080:8080 \
#       -e TRIBUTARY_UPSTREAM_TASKS=https://tasks.example.com \
#       -e TRIBUTARY_UPSTREAM_MEDIA=https://media.example.com \
#       -e TRIBUTARY_UPSTREAM_SEARCH=https://search.example.com \
#       tributary                                        # `serve`, the default command
#
# `serve` needs the operator to point every upstream somewhere: the baked-in configuration
# (config/tributary.yaml, at /etc/tributary/tributary.yaml) names http://127.0.0.1:8081, where
# only `tributary demo-upstream` listens, so without TRIBUTARY_UPSTREAM_<NAME> the service
# starts but answers 502. Every other setting is overridable the same way, without a new image:
#   TRIBUTARY_LISTEN (0.0.0.0:8080 here)   TRIBUTARY_WORKERS (one event loop per core you give it)
#   TRIBUTARY_LOG_LEVEL                    TRIBUTARY_ADMIN_TOKEN   TRIBUTARY_CORS_ORIGINS
#   TRIBUTARY_REDIS_URL (redis://HOST:PORT: join a fleet of replicas; deploy/compose.yaml runs three)
#   TRIBUTARY_CLUSTER_SECRET (required with it: the fleet's shared secret, ≥ 16 bytes)
#   TRIBUTARY_CONFIG: a whole configuration of your own, e.g.
#       docker run -v $PWD/prod.yaml:/etc/tributary/prod.yaml:ro \
#           -e TRIBUTARY_CONFIG=/etc/tributary/prod.yaml tributary
# Command-line options (`tributary serve --help`) override the environment in turn.
#
# No Docker engine runs on the project's machines: scripts/check-runtime-image proves this file
# without one. It builds the binary by running the build stage's `swift` RUN lines in a copy of
# exactly what the build stage COPYs, then replays the runtime stage (its RUN, COPY, ENV, USER
# and HEALTHCHECK) in a debootstrapped bookworm with chroot, and checks the service there. It
# understands the plain forms used below; keep to them (it fails loudly on anything else).

# ---------------------------------------------------------------------------------------- build
FROM swift:6.3.1-bookworm AS build

# libevent and OpenSSL headers for the CLibevent system library target, hiredis (and its
# libevent adapter header) for CHiredis: the fleet speaks to Redis with it; zlib's for CZlib
# (gzip answers).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libevent-dev libssl-dev libhiredis-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the manifest changes.
# Package.resolve[d] copies Package.resolved when the context has one (a wildcard may match
# nothing), so the build uses the pinned versions.
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve

# SwiftPM validates every target of the manifest, so the test and benchmark sources come too.
# The binary carries the default configuration (`tributary demo` needs no file): the link
# Sources/TributaryConfiguration/shipped.yaml points at config/tributary.yaml.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks ./Benchmarks
COPY config/tributary.yaml ./config/tributary.yaml
RUN swift build -c release --static-swift-stdlib --product tributary

# -------------------------------------------------------------------------------------- runtime
FROM debian:bookworm-slim AS runtime

# Exactly the packages that provide what `ldd tributary` lists beyond the base image (glibc,
# libstdc++6, libgcc-s1 and zlib1g are in it already; libevent_core comes through libevent_pthreads and
# libevent_openssl; libhiredis for the fleet's Redis), plus the CA certificates HTTPS
# upstreams are verified against.
# scripts/check-runtime-image fails when this list and ldd disagree, either way.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        ca-certificates \
        libevent-2.1-7 \
        libevent-core-2.1-7 \
        libevent-openssl-2.1-7 \
        libevent-pthreads-2.1-7 \
        libhiredis0.14 \
        libssl3 \
 && rm -rf /var/lib/apt/lists/*

# An unprivileged system user with no home and no shell; numeric in USER so that orchestrators
# can verify "runs as non-root" without reading /etc/passwd.
RUN groupadd --system --gid 10001 tributary \
 && useradd --system --uid 10001 --gid tributary --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin tributary

COPY --from=build /src/.build/release/tributary /usr/local/bin/tributary
COPY config/tributary.yaml /etc/tributary/tributary.yaml

ENV TRIBUTARY_CONFIG=/etc/tributary/tributary.yaml
ENV TRIBUTARY_LISTEN=0.0.0.0:8080

USER 10001:10001
EXPOSE 8080

# The slim image has no curl: the binary probes itself. The port follows TRIBUTARY_LISTEN.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD tributary probe "http://127.0.0.1:${TRIBUTARY_LISTEN##*:}/healthz"

# SIGTERM (docker stop) shuts the service down gracefully.
ENTRYPOINT ["/usr/local/bin/tributary"]
CMD ["serve"]
