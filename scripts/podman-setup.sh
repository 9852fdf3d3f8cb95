#!/bin/sh
# Make podman usable on a Debian machine like the dev/CI host (idempotent; run as root).
#
# Why: podman's default OCI runtime (crun) fails on hosts with hybrid cgroups, and the
# default open-files limit inside containers is lower than what pip and PyTorch's data
# loaders need. runc + explicit ulimits work: `runtime` and `default_ulimits` in
# containers.conf(5), https://github.com/containers/common/blob/main/docs/containers.conf.5.md
# (open-files limit: https://github.com/containers/podman/issues/1354).
set -eu

CONF=/etc/containers/containers.conf

if [ "$(id -u)" -ne 0 ]; then
    echo "podman-setup.sh: run as root (it installs packages and writes $CONF)" >&2
    exit 2
fi

need=""
for tool in podman runc debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || need="$need $tool"
done
if [ -n "$need" ]; then
    echo "podman-setup.sh: installing podman runc debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
        podman runc debootstrap
fi

nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
want=$(cat <<CONF
# Written by atlas scripts/podman-setup.sh
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF
)
if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$want" ]; then
    echo "podman-setup.sh: $CONF already set"
else
    mkdir -p "$(dirname "$CONF")"
    [ -f "$CONF" ] && cp "$CONF" "$CONF.bak-atlas"
    printf '%s\n' "$want" > "$CONF.tmp.$$"
    mv "$CONF.tmp.$$" "$CONF"
    echo "podman-setup.sh: wrote $CONF"
fi
podman info --format '{{.Host.OCIRuntime.Name}}' >/dev/null
echo "podman-setup.sh: podman ready (runtime $(podman info --format '{{.Host.OCIRuntime.Name}}'))"
