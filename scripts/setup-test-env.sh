#!/usr/bin/env bash
# Make this machine ready for lazy's test suite (Debian 12; root or sudo).
# Idempotent: every step checks first and skips what is already there.
#
#   bun            npm install -g bun
#   apt packages   docker.io chromium gnome-keyring ... (apt-get only if one is missing)
#   verdaccio      a pinned private npm registry for the broker tests, in /opt/lazy-test-verdaccio
#   docker engine  starts dockerd in the background if `docker info` fails (no systemd)
#   test images    lazy-test/debian:bookworm (debootstrap + docker import)
#                  lazy-test/node:bookworm   (docker build FROM the above)
#   second engine  scripts/second-engine.sh: a dockerd on tcp://127.0.0.1:23750 in its own
#                  mount namespace, standing in for a remote engine
#
# No image registry is reachable: images are built from the Debian mirror apt uses.
# Env: LAZY_TEST_REBUILD_IMAGES=1 rebuilds both images; LAZY_TEST_CACHE overrides the cache dir.
set -euo pipefail

SECONDS=0
log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is missing"
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

DEBIAN_IMAGE="lazy-test/debian:bookworm"
NODE_IMAGE="lazy-test/node:bookworm"
APT_PACKAGES=(docker.io chromium gnome-keyring libsecret-tools dbus dbus-x11 debootstrap
  nginx-light fcgiwrap wrk hyperfine git curl iproute2 zsh fish openssl openssh-client openssh-server socat jq)
CACHE_DIR="${LAZY_TEST_CACHE:-/var/cache/lazy-test}"
if [ -n "$SUDO" ] && [ -z "${LAZY_TEST_CACHE:-}" ]; then
  CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/lazy-test"
fi
DOCKERD_LOG=/var/log/dockerd.log

# ---- 1. bun -----------------------------------------------------------------------------
if bun --version >/dev/null 2>&1; then
  log "bun: $(bun --version) present"
else
  log "bun: installing with npm install -g bun"
  # npm may warn that the postinstall script was blocked; the bin still works (checked below).
  $SUDO npm install -g bun >&2 || die "npm install -g bun failed"
  hash -r
  command -v bun >/dev/null 2>&1 || die "bun not on PATH after npm install -g (npm prefix: $(npm prefix -g))"
  bun --version >/dev/null 2>&1 || die "bun is installed but 'bun --version' fails"
  log "bun: $(bun --version) installed"
fi

# ---- 2. apt packages ------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  log "apt: all ${#APT_PACKAGES[@]} packages present"
else
  log "apt: installing ${missing[*]}"
  # DPkg::Lock::Timeout: wait for another apt run instead of failing on its lock.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -qq update >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -y -q \
    install "${missing[@]}" >&2
  log "apt: installed ${#missing[@]} package(s)"
fi

# ---- 3. docker engine -------------------------------------------------------------------
bash "$(dirname "${BASH_SOURCE[0]}")/ensure-docker.sh"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
if [ "${LAZY_TEST_REBUILD_IMAGES:-0}" = 1 ]; then
  log "images: LAZY_TEST_REBUILD_IMAGES=1, removing $NODE_IMAGE and $DEBIAN_IMAGE"
  docker image rm -f "$NODE_IMAGE" "$DEBIAN_IMAGE" >/dev/null 2>&1 || true
fi

# ---- 4. lazy-test/debian:bookworm -----------------------------------------------------
if image_exists "$DEBIAN_IMAGE"; then
  log "image: $DEBIAN_IMAGE present"
else
  # The mirror apt itself uses for bookworm (sources.list, deb822 .sources, whatever apt reads).
  mirror="$(apt-get indextargets --no-release-info --format '$(REPO_URI)' \
    'Release: bookworm' 'Target-Of: deb' 2>/dev/null | head -n 1)"
  [ -n "$mirror" ] || die "image: no apt source for 'bookworm' found (see /etc/apt/sources.list*)"
  mirror_host="$(printf '%s' "$mirror" | sed -E 's#^[a-z+]+://([^/]+)/.*#\1#')"
  rootfs="$CACHE_DIR/debian-bookworm-rootfs"
  $SUDO mkdir -p "$CACHE_DIR"
  $SUDO rm -rf "$rootfs"
  log "image: debootstrap --variant=minbase bookworm from $mirror"
  t0=$SECONDS
  if ! $SUDO debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$CACHE_DIR/debootstrap.log" 2>&1; then
    tail -n 20 "$CACHE_DIR/debootstrap.log" >&2 || true
    die "image: debootstrap failed (full log: $CACHE_DIR/debootstrap.log)"
  fi
  log "image: debootstrap took $((SECONDS - t0))s"

  # Inside the image, apt uses the same Debian sources as the host (the suites apt has for
  # the mirror's host: bookworm, -updates, -security), and the host's date checks (the
  # mirror may be a snapshot whose Release files are past Valid-Until).
  sources="$(apt-get indextargets --no-release-info --format '$(SITE) $(RELEASE) $(COMPONENT)' \
    'Target-Of: deb' 2>/dev/null | sort -u |
    awk -v h="$mirror_host" '
      { split($1, a, "/"); if (a[3] != h || $2 !~ /^bookworm/ || $3 == "") next
        k = $1 " " $2; if (!(k in c)) { order[++n] = k; c[k] = $3 }
        else if ((" " c[k] " ") !~ (" " $3 " ")) c[k] = c[k] " " $3 }
      END { for (i = 1; i <= n; i++) print "deb " order[i] " " c[order[i]] }')"
  [ -n "$sources" ] || sources="deb $mirror bookworm main"
  printf '%s\n' "$sources" | $SUDO tee "$rootfs/etc/apt/sources.list" >/dev/null
  apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date) ' |
    $SUDO tee "$rootfs/etc/apt/apt.conf.d/99lazy-test-host" >/dev/null || true
  # What Debian's official docker images set: dpkg without fsync (the layer is the unit
  # of durability; apt/dpkg in builds on this kind of machine is slow otherwise), no
  # translations, no service starts inside builds.
  $SUDO sh -c "set -e
    echo force-unsafe-io > '$rootfs/etc/dpkg/dpkg.cfg.d/docker-apt-speedup'
    echo 'Acquire::Languages \"none\";' > '$rootfs/etc/apt/apt.conf.d/docker-no-languages'
    printf '#!/bin/sh\nexit 101\n' > '$rootfs/usr/sbin/policy-rc.d'
    chmod 755 '$rootfs/usr/sbin/policy-rc.d'
    rm -rf '$rootfs'/var/cache/apt/archives/*.deb '$rootfs'/var/lib/apt/lists/* '$rootfs'/tmp/*"

  log "image: docker import -> $DEBIAN_IMAGE"
  $SUDO tar --numeric-owner -C "$rootfs" -c . |
    docker import --change 'CMD ["/bin/bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$DEBIAN_IMAGE" >/dev/null
  $SUDO rm -rf "$rootfs"
  image_exists "$DEBIAN_IMAGE" || die "image: import of $DEBIAN_IMAGE failed"
  log "image: $DEBIAN_IMAGE built in $((SECONDS - t0))s"
fi

# ---- 5. lazy-test/node:bookworm ---------------------------------------------------------
if image_exists "$NODE_IMAGE"; then
  log "image: $NODE_IMAGE present"
else
  # Build context: the Dockerfile plus the extra CA certificates this host trusts
  # (/usr/local/share/ca-certificates). On this kind of machine HTTPS to the npm registry
  # goes through an egress proxy whose CA only the host trusts; without it `npm install`
  # inside the container cannot reach the registry. Node ignores the system store unless
  # NODE_EXTRA_CA_CERTS points at it.
  ctx="$CACHE_DIR/node-image-context"
  $SUDO rm -rf "$ctx"
  $SUDO mkdir -p "$ctx/local-ca"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    $SUDO cp /usr/local/share/ca-certificates/*.crt "$ctx/local-ca/"
  fi
  $SUDO tee "$ctx/Dockerfile" >/dev/null <<DOCKERFILE
FROM $DEBIAN_IMAGE
ENV DEBIAN_FRONTEND=noninteractive
COPY local-ca/ /usr/local/share/ca-certificates/
RUN apt-get update \\
 && apt-get install -y --no-install-recommends ca-certificates git nodejs npm sudo procps \\
 && update-ca-certificates \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \\
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
CMD ["/bin/bash"]
DOCKERFILE
  build_log="$CACHE_DIR/node-image-build.log"
  t0=$SECONDS
  log "image: docker build $NODE_IMAGE (apt in the build, default bridge network)"
  if ! docker build -t "$NODE_IMAGE" "$ctx" 2>&1 | $SUDO tee "$build_log" >/dev/null \
     || ! image_exists "$NODE_IMAGE"; then
    log "image: build on the bridge network failed; retrying with --network host"
    if ! docker build --network host -t "$NODE_IMAGE" "$ctx" 2>&1 | $SUDO tee "$build_log" >/dev/null \
       || ! image_exists "$NODE_IMAGE"; then
      tail -n 30 "$build_log" >&2 || true
      die "image: docker build of $NODE_IMAGE failed (full log: $build_log)"
    fi
    log "image: NOTE $NODE_IMAGE needed 'docker build --network host'"
  fi
  $SUDO rm -rf "$ctx"
  log "image: $NODE_IMAGE built in $((SECONDS - t0))s ($(docker run --rm "$NODE_IMAGE" node --version))"
  # npm must work inside (later: npm install -g of the agent harnesses). Warn, don't fail.
  if docker run --rm "$NODE_IMAGE" timeout 60 npm ping >/dev/null 2>&1; then
    log "image: npm registry reachable from $NODE_IMAGE"
  else
    log "image: WARNING npm registry NOT reachable from $NODE_IMAGE ('npm ping' failed)"
  fi
fi

# ---- 6. the real agent clients, for the host-launch tests (lazy chat) -----------------------
# Pinned to the versions docs/wire.md was measured with; lazy's default task image pins the same.
TOOLS_DIR="${LAZY_TEST_TOOLS:-/opt/lazy-test-tools}"
TOOLS=("@anthropic-ai/claude-code@2.1.197" "@openai/codex@0.171.0" "@mariozechner/pi-coding-agent@0.73.1")
have_tools=yes
for b in claude codex pi; do [ -x "$TOOLS_DIR/node_modules/.bin/$b" ] || have_tools=""; done
if [ -n "$have_tools" ] && "$TOOLS_DIR/node_modules/.bin/claude" --version 2>/dev/null | grep -q '^2\.1\.197'; then
  log "clients: claude, codex, pi present in $TOOLS_DIR"
else
  log "clients: npm install ${TOOLS[*]} into $TOOLS_DIR"
  $SUDO mkdir -p "$TOOLS_DIR"
  [ -f "$TOOLS_DIR/package.json" ] || echo '{"name":"lazy-test-tools","private":true}' | $SUDO tee "$TOOLS_DIR/package.json" >/dev/null
  (cd "$TOOLS_DIR" && $SUDO npm install --no-audit --no-fund --loglevel=error "${TOOLS[@]}" >&2) || die "clients: npm install failed"
  log "clients: installed ($("$TOOLS_DIR/node_modules/.bin/claude" --version 2>/dev/null), codex $("$TOOLS_DIR/node_modules/.bin/codex" --version 2>/dev/null | awk '{print $2}'), pi $("$TOOLS_DIR/node_modules/.bin/pi" --version 2>/dev/null))"
fi

# ---- 6b. verdaccio, the private npm registry the broker tests run (test/helpers/verdaccio.ts) ----
# 6.8.0: 6.10 wants Node 22 and Debian 12's node is 20. The tests start it from this folder.
VERDACCIO_DIR="${LAZY_TEST_VERDACCIO:-/opt/lazy-test-verdaccio}"
VERDACCIO_VERSION=6.8.0
if [ -x "$VERDACCIO_DIR/node_modules/.bin/verdaccio" ] &&
   grep -q "\"version\": \"$VERDACCIO_VERSION\"" "$VERDACCIO_DIR/node_modules/verdaccio/package.json" 2>/dev/null; then
  log "verdaccio: $VERDACCIO_VERSION present in $VERDACCIO_DIR"
else
  log "verdaccio: npm install verdaccio@$VERDACCIO_VERSION into $VERDACCIO_DIR"
  $SUDO mkdir -p "$VERDACCIO_DIR"
  [ -f "$VERDACCIO_DIR/package.json" ] || echo '{"name":"lazy-test-verdaccio","private":true}' | $SUDO tee "$VERDACCIO_DIR/package.json" >/dev/null
  (cd "$VERDACCIO_DIR" && $SUDO npm install --no-audit --no-fund --loglevel=error "verdaccio@$VERDACCIO_VERSION" >&2) || die "verdaccio: npm install failed"
  log "verdaccio: installed $("$VERDACCIO_DIR/node_modules/.bin/verdaccio" --version 2>/dev/null)"
fi

# ---- 7. a second engine, standing in for a remote one (test/containers/remote-engine.test.ts) ----
bash "$(dirname "${BASH_SOURCE[0]}")/second-engine.sh" >/dev/null || die "the second engine did not start (scripts/second-engine.sh)"

log "done in ${SECONDS}s"
