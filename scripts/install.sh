#!/usr/bin/env bash
# Build lazy from this checkout and install the binary.
#   bash scripts/install.sh
# Installs to /usr/local/bin/lazy, or ~/.local/bin/lazy when /usr/local/bin is not writable.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { printf 'install: %s\n' "$*" >&2; }

if ! bun --version >/dev/null 2>&1; then
  log "bun not found (or not working); installing it with npm install -g bun"
  command -v npm >/dev/null 2>&1 || { log "ERROR: npm is missing too; install Node.js first"; exit 1; }
  if [ "$(id -u)" -ne 0 ] && [ ! -w "$(npm prefix -g)" ] && command -v sudo >/dev/null 2>&1; then
    sudo npm install -g bun
  else
    npm install -g bun
  fi
  hash -r
  # npm may warn that bun's postinstall script was blocked; the binary still works.
  bun --version >/dev/null || { log "ERROR: bun installed but 'bun --version' fails"; exit 1; }
fi
log "bun $(bun --version)"

bun install
bun run build
[ -x dist/lazy ] || { log "ERROR: build did not produce dist/lazy"; exit 1; }

dest_dir=/usr/local/bin
if [ ! -w "$dest_dir" ]; then
  dest_dir="$HOME/.local/bin"
  log "/usr/local/bin is not writable: installing to $dest_dir instead"
  mkdir -p "$dest_dir"
  case ":$PATH:" in
    *":$dest_dir:"*) ;;
    *) log "note: $dest_dir is not on your PATH; add it (e.g. in ~/.profile)" ;;
  esac
fi
# Copy to a temp name then rename, so a running lazy is never overwritten in place.
install -m 0755 dist/lazy "$dest_dir/.lazy.new"
mv -f "$dest_dir/.lazy.new" "$dest_dir/lazy"
log "installed $dest_dir/lazy"
"$dest_dir/lazy" --version
# lazy runs each task's agent in a Docker container.
bash scripts/ensure-docker.sh
