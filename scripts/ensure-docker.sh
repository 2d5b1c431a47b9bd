#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io (Debian/Ubuntu) when the engine is
# missing, and start it (systemd where there is one, else dockerd in the background).
# Used by scripts/install.sh (lazy's tasks run in containers) and scripts/setup-test-env.sh.
set -euo pipefail
log() { printf 'docker: %s\n' "$*" >&2; }
die() { printf 'docker: ERROR: %s\n' "$*" >&2; exit 1; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is missing"
  SUDO="sudo"
fi
DOCKERD_LOG=/var/log/dockerd.log

if docker info >/dev/null 2>&1; then
  log "engine running"
  exit 0
fi
if [ -n "$SUDO" ] && $SUDO docker info >/dev/null 2>&1; then
  die "the engine runs but $(id -un) cannot use it: add the user to the 'docker' group (sudo usermod -aG docker $(id -un)) and log in again"
fi
if ! command -v dockerd >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "no Docker engine and no apt-get: install Docker for this system first"
  log "installing docker.io"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -qq update >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -y -q install docker.io >&2
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  log "starting docker with systemctl"
  $SUDO systemctl start docker || true
fi
if ! docker info >/dev/null 2>&1 && ! ${SUDO:-} docker info >/dev/null 2>&1; then
  log "starting dockerd in the background (log: $DOCKERD_LOG)"
  # Fully detached (setsid, no inherited stdio) so it never holds a CI log pipe open.
  $SUDO sh -c "setsid nohup dockerd >>'$DOCKERD_LOG' 2>&1 </dev/null &"
fi
for _ in $(seq 60); do
  if docker info >/dev/null 2>&1; then break; fi
  sleep 1
done
if ! docker info >/dev/null 2>&1; then
  $SUDO tail -n 20 "$DOCKERD_LOG" >&2 || true
  die "the engine did not answer 'docker info' within 60 s (see $DOCKERD_LOG)"
fi
log "engine up"
