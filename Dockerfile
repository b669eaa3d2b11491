# syntax=docker/dockerfile:1
#
# karmada-quota's images, for those who build with Docker (BuildKit). `make images` builds the same images without
# Docker (hack/images) and is what CI builds and checks (test/images); this file is kept consistent with it by hand:
# the same static binary at /usr/local/bin/<name>, the same entrypoint, user 65532:65532, working folder and labels.
#
#   docker build --build-arg BINARY=quota-webhook --build-arg VERSION=v0.1.0 \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) \
#     -t ghcr.io/karmada-quota/quota-webhook:v0.1.0 .
#
# BINARY is quota-webhook, quota-controller or karmada-quota-operator; --platform linux/arm64 cross-builds.
#
# Both bases are pinned by tag, not digest: the digests could not be resolved where this file was written (no
# registry access). Pin them by digest (`crane digest <image>`) for builds that must not move. golang's tag is the
# toolchain the project builds and tests with (go.mod asks for go 1.25.10 or later); distroless's static-debian12
# names its Debian release, where the bare "static" tag moves to the next one.
ARG GO_IMAGE=golang:1.26.8
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot
ARG BINARY=quota-webhook

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG BINARY
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The flags of `make build`: static (the base has no libc), no local paths, stamped with the version.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    case "$BINARY" in \
      quota-webhook|quota-controller) pkg=./cmd/$BINARY ;; \
      karmada-quota-operator) pkg=./operator/cmd/$BINARY ;; \
      *) echo "BINARY must be quota-webhook, quota-controller or karmada-quota-operator, not '$BINARY'" >&2; exit 1 ;; \
    esac && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/karmada-quota/karmada-quota/pkg/version.version=$VERSION -X github.com/karmada-quota/karmada-quota/pkg/version.revision=$REVISION" \
      -o /out/$BINARY $pkg

FROM ${BASE_IMAGE} AS image
ARG BINARY
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ARG CREATED
# Owned by root: the user the image runs as cannot replace its binary.
COPY --from=build /out/${BINARY} /usr/local/bin/${BINARY}
LABEL org.opencontainers.image.title="${BINARY}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/karmada-quota/karmada-quota" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
WORKDIR /

# ENTRYPOINT expands no build argument, so each binary has its own last stage, and BINARY picks one.
FROM image AS quota-webhook
LABEL org.opencontainers.image.description="karmada-quota's validating webhooks: admits Karmada ResourceBindings against KarmadaQuotas"
ENTRYPOINT ["/usr/local/bin/quota-webhook"]

FROM image AS quota-controller
LABEL org.opencontainers.image.description="karmada-quota's controller: counts what ResourceBindings use into KarmadaQuota status and settles reservations"
ENTRYPOINT ["/usr/local/bin/quota-controller"]

FROM image AS karmada-quota-operator
LABEL org.opencontainers.image.description="karmada-quota's operator: installs and upgrades karmada-quota onto a Karmada control plane"
ENTRYPOINT ["/usr/local/bin/karmada-quota-operator"]

FROM ${BINARY}
