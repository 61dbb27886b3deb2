# syntax=docker/dockerfile:1
#
# sharerelay's image: the relay as a static binary on distroless (no shell,
# no package manager, no libc), run as the image's nonroot user.
#
#   make image                      # docker build -t sharerelay:dev .
#   docker run --rm -v $PWD/configs:/etc/sharerelay:ro \
#     -e KAFKA_BOOTSTRAP_SERVERS=broker:9092 -e RELAY_INSTANCE=relay-1 \
#     -p 9464:9464 sharerelay:dev run /etc/sharerelay/booknest-packing.yaml
#
# Nothing secret goes into the image: the pipeline file is mounted, and the
# secrets it names as ${VAR} (KAFKA_PASSWORD, ...) come from the
# environment or from mounted files. No Docker engine runs in CI, so
# deploy/deploy_test.go checks this file's stages, flags and user instead.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first: a change to the code does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
# CGO_ENABLED=0: a static binary (Go's own DNS resolver, no libc), which
# distroless/static needs; -trimpath drops the build machine's paths; -s -w
# strip the symbol table and DWARF (panics still name functions).
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/relay ./cmd/relay

FROM gcr.io/distroless/static-debian12:nonroot
# The build has no .git (see .dockerignore): make image passes the commit.
ARG REVISION=unknown
LABEL org.opencontainers.image.title="sharerelay" \
      org.opencontainers.image.description="Kafka share-group relay, exactly once" \
      org.opencontainers.image.source="https://github.com/sharerelay/sharerelay" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/relay /usr/local/bin/relay
# /metrics, /healthz and /readyz listen on every interface, so that they
# can be scraped and probed: relay run uses RELAY_METRICS_ADDR when the
# pipeline file has no metrics.listen (and files that write it as
# ${RELAY_METRICS_ADDR:-...}, as the shipped ones do, read it too).
ENV RELAY_METRICS_ADDR=:9464
EXPOSE 9464
# relay health asks /readyz at RELAY_METRICS_ADDR (on the loopback) and
# exits 0 when ready, 1 when not (within its own 5 s timeout, so that it
# says why): the image has no shell or curl to do it.
# The start period covers connecting to the cluster and joining the share
# group.
HEALTHCHECK --interval=15s --timeout=10s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/relay", "health"]
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/relay"]
CMD ["run", "/etc/sharerelay/pipeline.yaml"]
