#!/usr/bin/env bash
# A real single-node Slurm on this machine, for tests and `bench demo` (env local-slurm).
#
#   scripts/local-slurm.sh up      install (apt, root) if missing, configure, start, wait idle
#   scripts/local-slurm.sh down    stop the daemons this script started (by PID)
#   scripts/local-slurm.sh status  exit 0 when the node answers and is usable
#   scripts/local-slurm.sh env     print `export SLURM_CONF=...` for a shell
#
# Everything (config, state, logs) lives in $ATLAS_SLURM_DIR (default: <repo>/.slurm),
# which git ignores. No systemd: the daemons are started directly and stopped by PID.
# Facts this script relies on: munged refuses to run as root (we run it as `munge`);
# every Slurm command hangs while munge is down (we check `munge -n | unmunge` first);
# every wait is bounded by `timeout`.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${ATLAS_SLURM_DIR:-$REPO/.slurm}"
CONF="$DIR/etc/slurm.conf"
export SLURM_CONF="$CONF"
WAIT_S="${ATLAS_SLURM_WAIT_S:-60}"
# Each folder's cluster has its own ports, so two checkouts (a developer's and CI's clone)
# can each run one on this machine: controller on CTLD_PORT, slurmd on CTLD_PORT+1. `up`
# picks them once (first choice derived from the folder, then the next free pair), records
# them in $DIR/etc/ports and reserves them in a machine-wide list, so a second checkout
# never picks a pair that is taken or reserved, whether its cluster is running or not.
PORTS_FILE="$DIR/etc/ports"
RESERVED="${ATLAS_SLURM_PORTS_LIST:-/tmp/atlas-local-slurm-ports}"  # "PORT FOLDER" per line
PORT_SLOTS=400
CTLD_PORT=$(( 6817 + ( $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % PORT_SLOTS ) * 2 ))
[[ -s "$PORTS_FILE" ]] && read -r CTLD_PORT <"$PORTS_FILE"
SLURMD_PORT=$(( CTLD_PORT + 1 ))
PACKAGES=(slurmctld slurmd slurm-client munge)

die() { echo "local-slurm: $*" >&2; exit 1; }
say() { echo "local-slurm: $*" >&2; }

pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

munge_ok() { timeout 10 bash -c 'munge -n | unmunge' >/dev/null 2>&1; }

install_packages() {
    local missing=()
    for cmd in slurmctld slurmd sbatch munged; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    [[ $(id -u) -eq 0 ]] || die "missing ${missing[*]} and not root: install them with \`sudo apt-get install ${PACKAGES[*]}\` (or run this script as root)"
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get here: install Slurm and munge with your package manager"
    say "installing ${PACKAGES[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -qq || die "apt-get update failed: check network access to the Debian mirror"
    timeout 900 apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null \
        || die "apt-get install ${PACKAGES[*]} failed"
}

start_munge() {
    if munge_ok; then return 0; fi
    [[ -s /etc/munge/munge.key ]] || die "/etc/munge/munge.key is missing: create it with \`mungekey -c\` as root"
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
    # munged refuses to run as root: run it as the munge user.
    runuser -u munge -- munged </dev/null >/dev/null 2>&1 9>&- || die "munged did not start: see /var/log/munge/munged.log"
    touch "$DIR/run/munged.ours"
    timeout 15 bash -c 'until munge -n | unmunge >/dev/null 2>&1; do sleep 0.5; done' \
        || die "munge -n | unmunge fails: munged is not answering (see /var/log/munge/munged.log)"
}

write_config() {
    local node_line host cpus mem defmem
    node_line="$(slurmd -C | head -n1)"           # NodeName=... CPUs=... RealMemory=...
    host="$(hostname -s)"
    cpus="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node_line")"
    mem="$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")"
    [[ -n "$cpus" && -n "$mem" ]] || die "cannot read CPUs/RealMemory from \`slurmd -C\`: $node_line"
    # Without DefMemPerCPU one job takes the whole node's memory: give each CPU a share,
    # leaving half the memory for the host.
    defmem=$(( mem / cpus / 2 ))
    install -d "$DIR/etc" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
    cat >"$CONF.tmp" <<CONF
# Written by scripts/local-slurm.sh; edits are overwritten on the next \`up\`.
ClusterName=atlas-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$defmem
# No slurmdbd: plain sacct fails, \`sacct -c\` reads finished jobs from this file.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
# scontrol forgets a finished job after MinJobAge seconds.
MinJobAge=300
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
# A fake GPU (gres.conf File=/dev/null) so --gres=gpu:1 requests can be tested.
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:1 State=UNKNOWN
PartitionName=atlas Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    printf 'NodeName=%s Name=gpu File=/dev/null\n' "$host" >"$DIR/etc/gres.conf"
    mv "$CONF.tmp" "$CONF"
}

node_state() { timeout 10 sinfo -h -N -o '%T' 2>/dev/null | head -n1; }

wait_idle() {
    local state=""
    for _ in $(seq 1 "$WAIT_S"); do
        state="$(node_state || true)"
        case "$state" in
            idle|mixed|allocated|completing) return 0 ;;
            down*|drain*|fail*) timeout 10 scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true ;;
        esac
        sleep 1
    done
    die "node not idle after ${WAIT_S}s (state: ${state:-no answer}); see $DIR/log/slurmctld.log and $DIR/log/slurmd.log"
}

port_taken() { [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]; }

others_reservations() {  # the reservations of other folders that still record that port
    local port dir
    [[ -f "$RESERVED" ]] || return 0
    while read -r port dir; do
        [[ -n "$dir" && "$dir" != "$DIR" && "$(head -n1 "$dir/etc/ports" 2>/dev/null)" == "$port" ]] \
            && echo "$port $dir"
    done <"$RESERVED"
    return 0
}

pick_ports() {  # under the machine-wide lock: the first free, unreserved pair; record and reserve it
    local kept first slot port
    if pid_alive "$DIR/run/slurmctld.pid" || pid_alive "$DIR/run/slurmd.pid"; then return 0; fi  # keep ours
    exec 8>>"$RESERVED.lock"
    timeout 60 flock 8 || die "another \`local-slurm.sh\` holds $RESERVED.lock for over 60s"
    kept="$(others_reservations)"
    first=$(( (CTLD_PORT - 6817) / 2 ))
    for i in $(seq 0 $(( PORT_SLOTS - 1 ))); do
        slot=$(( (first + i) % PORT_SLOTS ))
        port=$(( 6817 + slot * 2 ))
        grep -q "^$port " <<<"$kept" && continue
        port_taken "$port" || port_taken $(( port + 1 )) && continue
        CTLD_PORT=$port SLURMD_PORT=$(( port + 1 ))
        install -d "$DIR/etc"
        echo "$CTLD_PORT" >"$PORTS_FILE"
        { [[ -n "$kept" ]] && echo "$kept"; echo "$CTLD_PORT $DIR"; } >"$RESERVED.tmp" && mv "$RESERVED.tmp" "$RESERVED"
        exec 8>&-
        return 0
    done
    exec 8>&-
    die "no free pair of TCP ports in $PORT_SLOTS slots from 6817 (see \`ss -ltn\`); stop another checkout's cluster (scripts/local-slurm.sh down)"
}

is_up() {
    pid_alive "$DIR/run/slurmctld.pid" && pid_alive "$DIR/run/slurmd.pid" && munge_ok \
        && timeout 10 scontrol ping >/dev/null 2>&1
}

cmd_up() {
    install_packages
    install -d "$DIR/run"
    exec 9>"$DIR/run/lock"  # daemons are started with 9>&- so they do not keep the lock
    timeout 120 flock 9 || die "another \`local-slurm.sh\` holds $DIR/run/lock"
    if is_up; then wait_idle; say "already up (SLURM_CONF=$CONF)"; return 0; fi
    [[ $(id -u) -eq 0 ]] || die "starting the local Slurm needs root (slurmd runs jobs as their users)"
    pick_ports
    write_config
    start_munge
    pid_alive "$DIR/run/slurmctld.pid" || slurmctld -f "$CONF" </dev/null >/dev/null 2>&1 9>&- \
        || die "slurmctld did not start: see $DIR/log/slurmctld.log"
    timeout 30 bash -c "until scontrol ping >/dev/null 2>&1; do sleep 0.5; done" \
        || die "slurmctld does not answer \`scontrol ping\` after 30s: see $DIR/log/slurmctld.log"
    pid_alive "$DIR/run/slurmd.pid" || slurmd -f "$CONF" </dev/null >/dev/null 2>&1 9>&- \
        || die "slurmd did not start: see $DIR/log/slurmd.log"
    wait_idle
    say "up: node $(hostname -s) $(node_state); export SLURM_CONF=$CONF"
}

stop_pid() {  # pidfile name
    local f="$1" pid
    pid_alive "$f" || { rm -f "$f"; return 0; }
    pid="$(cat "$f")"
    kill "$pid" 2>/dev/null || true
    timeout 30 bash -c "while kill -0 $pid 2>/dev/null; do sleep 0.5; done" || { kill -9 "$pid" 2>/dev/null || true; }
    rm -f "$f"
}

cmd_down() {
    stop_pid "$DIR/run/slurmd.pid"
    stop_pid "$DIR/run/slurmctld.pid"
    # munged is shared by every checkout's cluster: stop it only when none is left.
    if [[ -e "$DIR/run/munged.ours" ]] && ! pgrep -x slurmctld >/dev/null && ! pgrep -x slurmd >/dev/null; then
        stop_pid /run/munge/munged.pid
        rm -f "$DIR/run/munged.ours"
    fi
    say "down"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) if is_up; then echo "up: node $(node_state) SLURM_CONF=$CONF"; else echo "down"; exit 1; fi ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
