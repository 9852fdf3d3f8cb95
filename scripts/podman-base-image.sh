#!/bin/sh
# Build a local stand-in for the CUDA PyTorch base image: minimal Debian + Python.
#
# Why: no image registry can be reached from the dev/CI machine, so the Dockerfile is
# built here on `--build-arg BASE_IMAGE=<this image>`. The image is cached: when it
# exists this script does nothing (pass --force to rebuild). Run as root.
#
# usage: scripts/podman-base-image.sh [--force] [IMAGE]   (IMAGE default below)
set -eu

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
IMAGE=${1:-localhost/atlas-base-python:bookworm}
SUITE=bookworm

if [ "$force" -eq 0 ] && podman image exists "$IMAGE"; then
    echo "podman-base-image.sh: $IMAGE exists (cached)"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || {
    echo "podman-base-image.sh: debootstrap is missing: run scripts/podman-setup.sh" >&2; exit 2; }

# The Debian mirror this machine's apt already uses (deb822 or one-line sources).
mirror=$(grep -h -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v security | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' \
    | awk '{print $1; exit}')
case "$mirror" in
    *debian*) ;;                              # a Debian mirror (e.g. a local proxy of one)
    *) mirror=http://deb.debian.org/debian ;; # none, or Ubuntu's archive (no bookworm there)
esac

root=$(mktemp -d /var/tmp/atlas-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "podman-base-image.sh: debootstrap $SUITE from $mirror (about a minute)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import \
    --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$IMAGE" >/dev/null
echo "podman-base-image.sh: built $IMAGE"
