#!/usr/bin/env bash
# Builds Switchyard's image without a registry: the static binary and the root
# file system are made on this machine (Go and the CA bundle of the host), and
# the Containerfile's `prebuilt` target, FROM scratch, is built from them with
# buildah (or podman). Where a registry is reachable, `podman build .` builds the
# same image from the Containerfile's Go build stage instead (docs/deploy.md).
#
#   deploy/build-image.sh [TAG]      default TAG: localhost/switchyard:dev
#
# Environment: VERSION (dev), the version the binary reports; CA_BUNDLE
# (/etc/ssl/certs/ca-certificates.crt); BUILDAH_ARGS, extra arguments to
# `buildah bud` (e.g. "--storage-driver vfs" where overlay is not available).
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-localhost/switchyard:dev}
VERSION=${VERSION:-dev}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

if command -v buildah >/dev/null; then
	build=(buildah bud)
elif command -v podman >/dev/null; then
	build=(podman build)
else
	echo "build-image.sh: needs buildah or podman (Debian: apt-get install buildah)" >&2
	exit 1
fi

CTX=$(mktemp -d /tmp/switchyard-image.XXXXXX)
trap 'rm -rf "$CTX"' EXIT
echo "building the static binary…" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$CTX/rootfs/switchyard" ./cmd/switchyard
ROOTFS=$CTX/rootfs CA_BUNDLE=$CA_BUNDLE sh deploy/rootfs.sh
echo "building $TAG…" >&2
# shellcheck disable=SC2086 # BUILDAH_ARGS is split on purpose
"${build[@]}" ${BUILDAH_ARGS:-} --target prebuilt -f Containerfile -t "$TAG" "$CTX"
