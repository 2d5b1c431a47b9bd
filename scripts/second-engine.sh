#!/usr/bin/env bash
# A second Docker engine on this machine that stands in for a remote one (issue 28, remote
# engines): it listens on loopback tcp only, and runs in its own mount namespace with a tmpfs
# over /tmp, /root and /home, so the host's project, worktree and state paths do not exist for
# it (a bind mount of any of them would be empty or fail). Its own data root, exec root, pid
# file and bridge on subnets of its own; --iptables=false so it never touches the first
# engine's chains (its containers reach this host's own addresses, e.g. its bridge gateway,
# without NAT; they reach nothing beyond this machine).
#
# Idempotent and fast: a second run finds it answering and exits. Prints its DOCKER_HOST.
# `second-engine.sh ssh` also makes it reachable over SSH (scripts/second-engine-ssh.sh) and
# prints that ssh:// address instead.
#   LAZY_SECOND_ENGINE_PORT  (default 23750)   LAZY_SECOND_ENGINE_DIR (default /var/lib/lazy-engine2)
# Test images: lazy-test/node:bookworm is loaded into it from the first engine when missing.
set -euo pipefail
log() { printf 'engine2: %s\n' "$*" >&2; }
die() { printf 'engine2: ERROR: %s\n' "$*" >&2; exit 1; }

PORT="${LAZY_SECOND_ENGINE_PORT:-23750}"
DIR="${LAZY_SECOND_ENGINE_DIR:-/var/lib/lazy-engine2}"
HOST="tcp://127.0.0.1:$PORT"
EXEC_ROOT=/run/lazy-engine2
LOG=/var/log/lazy-engine2.log
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

up() { docker -H "$HOST" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if ! up; then
  command -v dockerd >/dev/null || die "dockerd is missing (scripts/ensure-docker.sh installs it)"
  $SUDO mkdir -p "$DIR" "$EXEC_ROOT"
  # A pid file left by an engine that died would stop a new one starting.
  if [ -f "$EXEC_ROOT/dockerd.pid" ] && ! $SUDO kill -0 "$($SUDO cat "$EXEC_ROOT/dockerd.pid")" 2>/dev/null; then
    $SUDO rm -f "$EXEC_ROOT/dockerd.pid"
  fi
  log "starting dockerd on $HOST (log: $LOG)"
  # unshare -m makes the new namespace's mounts private: the tmpfs mounts stay in it.
  $SUDO sh -c "setsid nohup unshare -m sh -c '
      mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /root && mount -t tmpfs tmpfs /home &&
      exec dockerd -H $HOST --data-root $DIR --exec-root $EXEC_ROOT --pidfile $EXEC_ROOT/dockerd.pid \
        --bip 10.213.0.1/24 --default-address-pool base=10.214.0.0/16,size=24 \
        --iptables=false --ip-masq=false --userland-proxy=false \
        --storage-driver overlay2 --log-level warn' >>$LOG 2>&1 </dev/null &"
  for _ in $(seq 60); do
    up && break
    sleep 0.5
  done
  up || { $SUDO tail -n 20 "$LOG" >&2 || true; die "the second engine did not answer on $HOST within 30 s (see $LOG)"; }
  log "up"
fi

# The test image, from the first engine (no registry is reachable here).
if ! docker -H "$HOST" image inspect lazy-test/node:bookworm >/dev/null 2>&1; then
  if docker image inspect lazy-test/node:bookworm >/dev/null 2>&1; then
    log "loading lazy-test/node:bookworm"
    docker save lazy-test/node:bookworm | docker -H "$HOST" load -q >&2
  else
    log "lazy-test/node:bookworm is not on the first engine yet: not loaded"
  fi
fi
if [ "${1:-}" = ssh ]; then
  exec bash "$(dirname "$0")/second-engine-ssh.sh" "$HOST"
fi
echo "$HOST"
