#!/bin/sh
# Build the training image (Dockerfile) with podman on this machine.
#
# Why the options: no registry is reachable here, so BASE_IMAGE is the local stand-in
# from scripts/podman-base-image.sh; pip inside the build does not trust the TLS proxy's
# CA unless the host bundle is mounted; and the CPU torch wheel comes from the host's
# wheel folder (pip's find-links) instead of a multi-GB CUDA download.
#
# usage: scripts/podman-image.sh [IMAGE]      env: BASE_IMAGE, WHEELS (host wheel folder)
set -eu

IMAGE=${1:-localhost/atlas-biggan:dev}
BASE_IMAGE=${BASE_IMAGE:-localhost/atlas-base-python:bookworm}
cd "$(dirname "$0")/.."

command -v podman >/dev/null 2>&1 || {
    echo "podman-image.sh: podman is missing: run scripts/podman-setup.sh as root" >&2; exit 2; }
podman image exists "$BASE_IMAGE" || scripts/podman-base-image.sh "$BASE_IMAGE"

set -- --build-arg "BASE_IMAGE=$BASE_IMAGE"
CA=/etc/ssl/certs/ca-certificates.crt
[ -f "$CA" ] && set -- "$@" -v "$CA:$CA:ro"
if [ -z "${WHEELS:-}" ] && command -v pip3 >/dev/null 2>&1; then
    WHEELS=$(pip3 config list 2>/dev/null | sed -n "s/^\(global\|:env:\)\.find-links='\([^ ']*\).*/\2/p" | head -n1)
fi
if [ -n "${WHEELS:-}" ] && [ -d "$WHEELS" ]; then
    set -- "$@" -v "$WHEELS:/opt/wheels:ro" --build-arg "PIP_EXTRA_ARGS=--find-links /opt/wheels"
else
    # No local wheel folder: take the CPU build from PyTorch's index, not the multi-GB CUDA one.
    set -- "$@" --build-arg "PIP_EXTRA_ARGS=--extra-index-url https://download.pytorch.org/whl/cpu"
fi
previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
commit=$(git rev-parse HEAD 2>/dev/null || echo "")
dirty=0
[ -n "$commit" ] && [ -n "$(git status --porcelain -- Dockerfile bench workflows clusters pyproject.toml 2>/dev/null)" ] && dirty=1
podman build --format docker --label "atlas.commit=$commit" --label "atlas.dirty=$dirty" \
    --build-arg "ATLAS_GIT_SHA=$commit" --build-arg "ATLAS_GIT_DIRTY=$dirty" "$@" -t "$IMAGE" -f Dockerfile .
current=$(podman image inspect --format '{{.Id}}' "$IMAGE")
# The image this tag pointed at before is now untagged: remove it unless something uses it.
if [ -n "$previous" ] && [ "$previous" != "$current" ] \
   && [ -z "$(podman image inspect --format '{{.RepoTags}}' "$previous" 2>/dev/null | tr -d '[]')" ]; then
    podman image rm "$previous" >/dev/null 2>&1 || true
fi
echo "podman-image.sh: built $IMAGE ($current)"
