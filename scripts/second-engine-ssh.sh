#!/usr/bin/env bash
# The second engine (scripts/second-engine.sh) reachable over SSH as well, the way a build
# server is: `ssh://root@127.0.0.1:<port>`. An sshd on loopback runs in that engine's mount
# namespace (nsenter into dockerd's, then a private one of its own) where the engine's unix
# socket is bind-mounted over /var/run/docker.sock, so `ssh -L …:/var/run/docker.sock` there
# reaches the second engine and nothing of this machine's first one. Its host key,
# authorized_keys, config and a client key for tests live under LAZY_SECOND_ENGINE_SSH_DIR.
# The engine's socket is a socat relay to its tcp port (an engine already running cannot be
# given another -H without a restart, and other suites may be using it).
#
# Two ports: PORT forwards unix sockets; PORT+1 has AllowStreamLocalForwarding off (what a
# server whose sshd refuses it looks like). Idempotent. Prints the ssh:// address. (sshd checks
# unix-socket forwards against its TCP permissions too: AllowTcpForwarding must allow local.)
#   LAZY_SECOND_ENGINE_SSH_PORT (default 23751)  LAZY_SECOND_ENGINE_SSH_DIR (default /var/lib/lazy-engine2-ssh)
set -euo pipefail
log() { printf 'engine2-ssh: %s\n' "$*" >&2; }
die() { printf 'engine2-ssh: ERROR: %s\n' "$*" >&2; exit 1; }

ENGINE="$1" # tcp://127.0.0.1:PORT of the second engine
PORT="${LAZY_SECOND_ENGINE_SSH_PORT:-23751}"
DIR="${LAZY_SECOND_ENGINE_SSH_DIR:-/var/lib/lazy-engine2-ssh}"
RUN=/run/lazy-engine2-ssh
SOCK="$RUN/docker.sock"
PIDFILE=/run/lazy-engine2/dockerd.pid
LOG=/var/log/lazy-engine2-ssh.log
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
for t in sshd socat ssh-keygen nsenter; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] ||
    die "$t is missing (scripts/setup-test-env.sh installs openssh-server, openssh-client, socat)"
done

$SUDO mkdir -p "$DIR" "$RUN"
$SUDO chmod 700 "$DIR" "$RUN"

# The engine's unix socket: a relay to its tcp port, root only.
if ! $SUDO curl -sf --max-time 3 --unix-socket "$SOCK" http://engine/_ping >/dev/null 2>&1; then
  $SUDO rm -f "$SOCK"
  hostport="${ENGINE#tcp://}"
  log "relaying $SOCK to $ENGINE"
  $SUDO sh -c "setsid nohup socat UNIX-LISTEN:$SOCK,fork,mode=600 TCP:$hostport >>$LOG 2>&1 </dev/null &"
  for _ in $(seq 40); do
    $SUDO curl -sf --max-time 3 --unix-socket "$SOCK" http://engine/_ping >/dev/null 2>&1 && break
    sleep 0.25
  done
  $SUDO curl -sf --max-time 3 --unix-socket "$SOCK" http://engine/_ping >/dev/null 2>&1 || die "the relay on $SOCK does not answer (see $LOG)"
fi

# Keys and config, made once.
$SUDO test -f "$DIR/host_ed25519" || $SUDO ssh-keygen -q -t ed25519 -N "" -C lazy-engine2-host -f "$DIR/host_ed25519"
$SUDO test -f "$DIR/client_ed25519" || $SUDO ssh-keygen -q -t ed25519 -N "" -C lazy-engine2-client -f "$DIR/client_ed25519"
$SUDO cp "$DIR/client_ed25519.pub" "$DIR/authorized_keys"
$SUDO tee "$DIR/sshd_config" >/dev/null <<EOF
Port $PORT
Port $((PORT + 1))
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519
AuthorizedKeysFile $DIR/authorized_keys
PidFile $RUN/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowTcpForwarding local
AllowAgentForwarding no
X11Forwarding no
PermitTTY no
AllowStreamLocalForwarding yes
Match LocalPort $((PORT + 1))
  AllowStreamLocalForwarding no
EOF

up() { timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; head -c 4 <&3" 2>/dev/null | grep -q SSH; }
if ! up; then
  [ -f "$PIDFILE" ] || die "the second engine is not running (no $PIDFILE): run scripts/second-engine.sh"
  dpid="$(cat "$PIDFILE")"
  $SUDO rm -f "$RUN/sshd.pid"
  log "starting sshd on 127.0.0.1:$PORT in the namespace of dockerd $dpid (log: $LOG)"
  # A private namespace inside the engine's: the bind mount over /var/run/docker.sock stays in it.
  $SUDO sh -c "setsid nohup nsenter -m -t $dpid unshare -m --propagation private sh -c '
      mkdir -p /run/sshd && mount --bind $SOCK /var/run/docker.sock &&
      exec /usr/sbin/sshd -D -e -f $DIR/sshd_config' >>$LOG 2>&1 </dev/null &"
  for _ in $(seq 40); do
    up && break
    sleep 0.25
  done
  up || { $SUDO tail -n 20 "$LOG" >&2 || true; die "sshd did not answer on 127.0.0.1:$PORT within 10 s (see $LOG)"; }
  log "up"
fi
echo "ssh://root@127.0.0.1:$PORT"
