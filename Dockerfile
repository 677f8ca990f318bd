# syntax=docker/dockerfile:1
# One image with every binary of the project (shard, cache-server,
# front-proxy, run-system, virtual-workspaces) in /usr/local/bin; the Helm chart runs each
# component from it by its command. Build: `make image` or
#   docker build -t ghcr.io/shardplane/shardplane:dev .

# --- build: static binaries, module and build caches kept between builds
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY pkg ./pkg
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/...

# --- run: distroless static, non-root (uid 65532), no shell
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
WORKDIR /var/lib/shardplane
EXPOSE 6443
ENTRYPOINT ["/usr/local/bin/shard"]
