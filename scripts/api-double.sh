#!/usr/bin/env bash
# The OpenShift API double with its kubelet and Kueue, for `make demo` (env local-openshift).
#
#   scripts/api-double.sh up      start it (fresh state), apply clusters/local-openshift, wait
#   scripts/api-double.sh down    stop the double this script started (by PID)
#
# Its state (kubeconfig, TLS files, the kubelet's folders: built commits, volumes, logs)
# lives in $ATLAS_API_DOUBLE (default: <repo>/.api-double), which git ignores; the
# kubeconfig is $ATLAS_API_DOUBLE/kubeconfig, where clusters/local-openshift/env.yaml
# looks. Builds export this repository at the commit a run asks for (podman builds it
# where podman is installed); pods run as processes of this checkout's .venv.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${ATLAS_API_DOUBLE:-$REPO/.api-double}"
PY="$REPO/.venv/bin/python"
KUBECTL="$REPO/.venv/bin/kubectl"
QUEUE="cpu-localqueue=cpu:1,memory:4Gi"  # quota for one local-openshift run at a time

down() {
  if [[ -s "$DIR/pid" ]] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
    kill "$(cat "$DIR/pid")"
    for _ in $(seq 50); do kill -0 "$(cat "$DIR/pid")" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$DIR/pid"
}

up() {
  down
  rm -rf "$DIR"
  mkdir -p "$DIR"
  (cd "$REPO" && exec "$PY" -m tests.doubles.apiserver --dir "$DIR" --kubelet "$REPO" --kueue "$QUEUE") \
    >"$DIR/double.log" 2>&1 &
  echo $! >"$DIR/pid"
  for _ in $(seq 100); do [[ -s "$DIR/kubeconfig" ]] && break; sleep 0.1; done
  if [[ ! -s "$DIR/kubeconfig" ]]; then
    echo "api-double: did not start (see $DIR/double.log)" >&2
    return 1
  fi
  KUBECONFIG="$DIR/kubeconfig" "$KUBECTL" apply -k "$REPO/clusters/local-openshift" >"$DIR/apply.log" 2>&1 \
    || { echo "api-double: kubectl apply -k clusters/local-openshift failed (see $DIR/apply.log)" >&2; return 1; }
  echo "api-double: serving a TEST DOUBLE of the OpenShift API server (not a cluster; what it does not model: clusters/moc/README.md); export ATLAS_API_DOUBLE=$DIR (kubeconfig $DIR/kubeconfig)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
