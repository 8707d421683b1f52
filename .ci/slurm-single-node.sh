#!/usr/bin/env bash
# Copied from the team recipe (shared/recipes/slurm-single-node.sh); used by tests/cluster.
# Single-node Slurm (Debian bookworm: Slurm 22.05, munge 0.5.15) for CI, no systemd needed.
#   slurm-ci.sh install          # apt-get install the packages (apt-get update must have run)
#   slurm-ci.sh start            # write config, start daemons, wait until the node is idle
#   slurm-ci.sh stop             # stop the daemons this script started, by PID
#   slurm-ci.sh run CMD ARGS...  # start, run CMD, stop (daemons stay children of this shell)
# SLURM_CI_ACCOUNTING=1 adds MariaDB + slurmdbd so that `sacct` works.
set -euo pipefail

ROOT=${SLURM_CI_ROOT:-/tmp/slurm-single-node}
ACCT=${SLURM_CI_ACCOUNTING:-0}
CONF=$ROOT/etc/slurm.conf
HOST=$(hostname -s)
CPUS=${SLURM_CI_CPUS:-$(nproc)}
MEM=${SLURM_CI_MEM_MB:-20000}
MUNGE_SOCK=$ROOT/munge/run/munge.socket.2
DB_SOCK=$ROOT/mysql/run/mysqld.sock
export SLURM_CONF=$CONF

log() { echo "[slurm-ci] $(date +%T) $*" >&2; }

install() {
  local pkgs="slurmctld slurmd slurm-client munge"
  [ "$ACCT" = 1 ] && pkgs="$pkgs slurmdbd mariadb-server"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs >/dev/null
}

write_conf() {
  rm -rf "$ROOT"/state "$ROOT"/spool     # fresh cluster every start
  mkdir -p "$ROOT"/{etc,state,spool,log,run} "$ROOT"/munge/{run,log,lib}
  chown -R munge:munge "$ROOT/munge"
  chmod 700 "$ROOT/munge/lib" "$ROOT/munge/log"; chmod 755 "$ROOT/munge/run"
  if [ ! -s /etc/munge/munge.key ]; then     # the munge package normally creates it
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key
  fi
  local acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  if [ "$ACCT" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
# munge socket for the slurmdbd connection (AuthInfo is not used for that one)
AccountingStoragePass=$MUNGE_SOCK
JobAcctGatherType=jobacct_gather/linux"
  fi
  cat > "$CONF" <<EOF
ClusterName=ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$ROOT/state
SlurmdSpoolDir=$ROOT/spool
SlurmctldPidFile=$ROOT/run/slurmctld.pid
SlurmdPidFile=$ROOT/run/slurmd.pid
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
MpiDefault=none
ProctrackType=proctrack/linuxproc
# task/affinity works here without cgroups; task/none makes srun --cpu-bind warn
TaskPlugin=task/affinity
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# jobs without --mem would otherwise get the whole node and run one at a time
DefMemPerCPU=1000
$acct
JobCompType=jobcomp/none
# finished jobs stay visible to squeue for 10 min (snakemake --slurm-status-command squeue)
MinJobAge=600
SchedulerParameters=sched_interval=5
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  # snakemake's slurm-jobstep drops SLURM_CONF before calling srun inside a job,
  # so the config must also be found at the default path.
  mkdir -p /etc/slurm
  ln -sfn "$CONF" /etc/slurm/slurm.conf
}

bg() {  # bg NAME CMD...: start CMD in the background, record its PID
  local name=$1; shift
  "$@" >>"$ROOT/log/$name.fg.log" 2>&1 &
  echo $! > "$ROOT/run/$name.fg.pid"
}

start_db() {
  mkdir -p "$ROOT/mysql/run"; chown -R mysql:mysql "$ROOT/mysql"
  if [ ! -d "$ROOT/mysql/data/mysql" ]; then
    mariadb-install-db --user=mysql --datadir="$ROOT/mysql/data" --skip-test-db \
      --auth-root-authentication-method=socket >"$ROOT/log/mariadb-install.log" 2>&1
  fi
  bg mariadbd setpriv --reuid=mysql --regid=mysql --init-groups mariadbd --no-defaults \
    --datadir="$ROOT/mysql/data" --socket="$DB_SOCK" --pid-file="$ROOT/mysql/run/mysqld.pid" \
    --port=3307 --bind-address=127.0.0.1 --log-error="$ROOT/log/mariadbd.log" \
    --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900
  for _ in $(seq 100); do mariadb-admin --socket="$DB_SOCK" ping >/dev/null 2>&1 && break; sleep 0.1; done
  mariadb --socket="$DB_SOCK" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat > "$ROOT/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdPort=6819
SlurmUser=root
PidFile=$ROOT/run/slurmdbd.pid
LogFile=$ROOT/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3307
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$ROOT/etc/slurmdbd.conf"   # slurmdbd refuses a readable one
  bg slurmdbd slurmdbd -D                # finds slurmdbd.conf next to $SLURM_CONF
  for _ in $(seq 100); do
    timeout 5 sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2
  done
  timeout 10 sacctmgr -i add cluster ci >/dev/null 2>&1 || true   # fails harmlessly if it exists
}

start() {
  write_conf
  # -F / -D: foreground, so the PIDs recorded are the daemons themselves
  bg munged setpriv --reuid=munge --regid=munge --init-groups \
    munged -F --socket="$MUNGE_SOCK" --pid-file="$ROOT/munge/run/munged.pid" \
    --log-file="$ROOT/munge/log/munged.log" --seed-file="$ROOT/munge/lib/munged.seed"
  for _ in $(seq 50); do [ -S "$MUNGE_SOCK" ] && break; sleep 0.1; done
  [ -S "$MUNGE_SOCK" ] || { log "munged did not start"; cat "$ROOT"/log/munged.fg.log >&2; return 1; }
  [ "$ACCT" = 1 ] && start_db
  bg slurmctld slurmctld -D
  bg slurmd slurmd -D
  local st=
  for _ in $(seq 100); do
    st=$(timeout 5 sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
    [ "$st" = idle ] && { log "node $HOST idle"; return 0; }
    sleep 0.2
  done
  log "node not idle after 20 s (state: ${st:-none})"; tail -n 20 "$ROOT"/log/*.log >&2; return 1
}

stop_pids() {  # stop_pids NAME...: TERM them all, wait up to 10 s, then KILL
  local d f pids=()
  for d in "$@"; do
    f=$ROOT/run/$d.fg.pid
    [ -s "$f" ] && pids+=("$(cat "$f")") && rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  alive() { local p; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
  for _ in $(seq 100); do alive || return 0; sleep 0.1; done
  log "still alive after 10 s, KILL: ${pids[*]}"; kill -KILL "${pids[@]}" 2>/dev/null || true
}

stop() {
  stop_pids slurmd slurmctld slurmdbd
  stop_pids mariadbd
  stop_pids munged        # last: the others need it to shut down cleanly
  rm -f /etc/slurm/slurm.conf
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  run) shift; trap stop EXIT; start; "$@" ;;
  *) echo "usage: $0 install|start|stop|run CMD..." >&2; exit 2 ;;
esac
