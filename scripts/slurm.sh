#!/usr/bin/env bash
# A real single-node Slurm on this machine, for running jobs/*.slurm in CI and on a
# workstation (Debian 12, root or sudo). Idempotent: each part is skipped when done.
#   bash scripts/slurm.sh        or     source scripts/slurm.sh   (scripts/test.sh does)
# Then:  sinfo;  sbatch jobs/production.slurm
#
# 1. installs slurm-wlm and munge (apt-get) if missing
# 2. creates a munge key if there is none
# 3. writes /etc/slurm/slurm.conf for this host (its real CPUs and memory, from
#    `slurmd -C`), one partition "debug"; an existing slurm.conf not written by this
#    script is left alone
# 4. starts munged (as user munge), slurmctld and slurmd (as root) unless running
# 5. waits until sinfo shows the node idle (SLURM_WAIT seconds, default 60)
# Logs: /var/log/slurm/slurmctld.log and slurmd.log.
# If Slurm already answers (sinfo works and shows an idle node), nothing is done.

_pdem_slurm() {
    local SUDO="" conf=/etc/slurm/slurm.conf marker="# written by pdem scripts/slurm.sh"
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    _sl_log() { echo "[pdem slurm] $*"; }
    _sl_die() { echo "[pdem slurm] ERROR: $*" >&2; return 1; }
    _sl_state() { sinfo -h -N -o "%T" 2>/dev/null | head -n1 || true; }

    if command -v sinfo >/dev/null && [[ "$(_sl_state)" =~ ^(idle|mixed|allocated|completing)$ ]]; then
        _sl_log "Slurm is up: $(sinfo -h -o '%P %D node(s) %T' | head -n1) (nothing to do)"
        return 0
    fi

    # 1. packages
    local p missing=""
    for p in slurm-wlm munge; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        _sl_log "installing Debian packages:$missing"
        $SUDO apt-get update -qq || _sl_die "apt-get update failed" || return 1
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null \
            || _sl_die "apt-get install$missing failed" || return 1
    fi

    # 2. munge key (the package usually creates one; a key of our own otherwise)
    if [ ! -s /etc/munge/munge.key ]; then
        _sl_log "creating /etc/munge/munge.key"
        $SUDO mkdir -p /etc/munge
        if command -v mungekey >/dev/null; then
            $SUDO mungekey --create --keyfile=/etc/munge/munge.key
        else
            $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
        $SUDO chown munge:munge /etc/munge/munge.key
        $SUDO chmod 400 /etc/munge/munge.key
    fi

    # 3. slurm.conf for this host
    local host node plugindir mpi=none
    host="$(hostname -s)"
    # "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24000"
    node="$(slurmd -C 2>/dev/null | grep '^NodeName=')" || _sl_die "slurmd -C cannot describe this node" || return 1
    plugindir="$(dirname "$(find /usr/lib -name 'select_cons_tres.so' -path '*slurm*' 2>/dev/null | head -n1)")"
    [ -e "$plugindir/mpi_pmix.so" ] && mpi=pmix
    local text
    text="$marker; rewritten on each run while this line is here
# A single-node cluster: controller and compute node are this host ($host).
ClusterName=pdem
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# no cgroups in containers: track processes through /proc, no task binding plugin
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$mpi
ReturnToService=2
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=300
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP"
    if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
        _sl_log "keeping $conf (not written by this script)"
    elif [ "$(cat "$conf" 2>/dev/null)" != "$text" ]; then
        _sl_log "writing $conf ($node, MpiDefault=$mpi)"
        $SUDO mkdir -p /etc/slurm
        printf '%s\n' "$text" | $SUDO tee "$conf" >/dev/null
        # a controller already running from an older file re-reads it
        scontrol ping 2>/dev/null | grep -q UP && $SUDO scontrol reconfigure
    fi
    $SUDO mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm

    # 4. daemons
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        _sl_log "starting munged"
        $SUDO mkdir -p /run/munge /var/log/munge /var/lib/munge
        $SUDO chown munge:munge /run/munge /var/log/munge /var/lib/munge
        $SUDO runuser -u munge -- /usr/sbin/munged || _sl_die "munged did not start (see /var/log/munge/munged.log)" || return 1
    fi
    if ! pgrep -x slurmctld >/dev/null; then
        _sl_log "starting slurmctld"
        $SUDO slurmctld || _sl_die "slurmctld did not start (see /var/log/slurm/slurmctld.log)" || return 1
    fi
    if ! pgrep -x slurmd >/dev/null; then
        _sl_log "starting slurmd"
        $SUDO slurmd || _sl_die "slurmd did not start (see /var/log/slurm/slurmd.log)" || return 1
    fi

    # 5. wait for the node
    local state="" waited=0 limit="${SLURM_WAIT:-60}" resumed=""
    while [ "$waited" -lt "$limit" ]; do
        state="$(_sl_state)"
        case "$state" in
            idle|mixed|allocated|completing)
                _sl_log "Slurm is up: $(sinfo -h -o '%P %D node(s) %T, %c CPUs, %m MB' | head -n1)"
                return 0 ;;
            down*|drain*)      # e.g. left down by an earlier run: bring it back once
                if [ -z "$resumed" ]; then
                    $SUDO scontrol update NodeName="$host" State=RESUME 2>/dev/null || true
                    resumed=1
                fi ;;
        esac
        sleep 1; waited=$((waited + 1))
    done
    _sl_die "node $host not idle after ${limit}s (state '${state:-no answer}'; $(sinfo -h -N -o '%R' 2>/dev/null | head -n1)). Logs: /var/log/slurm/slurmctld.log, /var/log/slurm/slurmd.log"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    _pdem_slurm
else
    _pdem_slurm || return 1
fi
