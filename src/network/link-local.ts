/**
 * Task containers must not reach link-local metadata addresses: on a cloud VM,
 * 169.254.169.254 (and fd00:ec2::254, and the rest of 169.254.0.0/16 and fe80::/10) hands out
 * the host's own credentials to whoever asks. lazy drops those packets where they enter the
 * host from the project's bridge: a raw-table PREROUTING chain, LAZY-LINKLOCAL (iptables and
 * ip6tables), that every lazy project's bridge jumps to (`-i <bridge>`). The chain holds the
 * same rules for every project; each project adds and removes only its own jump.
 *
 * The work is one POSIX shell script, so it runs the same on the host (lazy as root) or in a
 * short-lived helper container in the host's network namespace (lazy as a user who may use
 * Docker). Every step checks before it changes (`-C`), so running it again is cheap and
 * repairs what Docker or a firewall reload flushed. Rule specs are never compared as text:
 * `iptables -S` prints options in its own order.
 */

export const CHAIN = "LAZY-LINKLOCAL";

/** What the chain drops, IPv4: the whole link-local range (169.254.169.254 and ECS's .170.2). */
export const RULES4 = ["-d 169.254.0.0/16 -j DROP"];

/**
 * IPv6: AWS's IPv6 metadata address, and link-local fe80::/10 except neighbour discovery
 * (router and neighbour solicitations and advertisements: a container on an IPv6 network
 * needs them to reach its gateway at all). Every rule is a DROP, so their order does not
 * matter and "each rule is there, and nothing else" (-C, and a count) proves the chain right.
 */
export const RULES6 = [
  "-d fd00:ec2::254/128 -j DROP",
  "-d fe80::/10 ! -p ipv6-icmp -j DROP",
  `-d fe80::/10 -p ipv6-icmp ${[133, 134, 135, 136].map((t) => `-m icmp6 ! --icmpv6-type ${t}`).join(" ")} -j DROP`,
];

/** Exit codes of the script, so the caller can say which step failed. */
export const EXIT = { v4: 10, v6: 11, noIptables: 12, fence: 13 } as const;

/** The outcome for a project, as the daemon reports it (lazy doctor shows it). */
export type Guard =
  | { state: "blocked"; bridge: string }
  | { state: "allowed"; bridge: string }
  | { state: "unblocked"; reason: string; remedy: string };

/** Linux interface names: at most 15 bytes; only what Docker's bridge names use goes into the script. */
export function validBridge(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,15}$/.test(name);
}

/**
 * The bridge interface of a Docker network: the name its options give, else Docker's own
 * `br-<first 12 of the network id>`.
 */
export function bridgeOf(network: { Id: string; Options?: Record<string, string> }): string {
  return network.Options?.["com.docker.network.bridge.name"] || `br-${network.Id.slice(0, 12)}`;
}

const prelude = (bridge: string) => {
  if (!validBridge(bridge)) throw new Error(`not a bridge interface name: ${JSON.stringify(bridge)}`);
  return [
    "set -u",
    "PATH=/usr/sbin:/sbin:/usr/bin:/bin:$PATH",
    `BR='${bridge}'`,
    `C=${CHAIN}`,
    // -w: wait for the xtables lock instead of failing while Docker holds it.
    'v4() { iptables -w 10 -t raw "$@"; }',
    'v6() { ip6tables -w 10 -t raw "$@"; }',
    // prune FAMILY: remove jumps to the chain that name an interface which is gone (a project
    // network removed behind lazy's back). The listing is read token by token, never as a
    // whole line: iptables prints options in its own order.
    "prune() {",
    "  $1 -S PREROUTING 2>/dev/null | while read -r line; do",
    '    case " $line " in *" -j $C "*) ;; *) continue ;; esac',
    "    i=''; prev=''",
    '    for w in $line; do [ "$prev" = "-i" ] && i=$w; prev=$w; done',
    "    case \"$i\" in '' | *[!A-Za-z0-9_.-]*) continue ;; esac",
    '    [ -e "/sys/class/net/$i" ] || $1 -D PREROUTING -i "$i" -j $C',
    "  done",
    "}",
  ];
};

/**
 * The script that installs the chain (when its rules are not exactly lazy's) and the bridge's
 * jump; `then` are more steps in the same run (the project's fence, fence.ts), so a launch
 * pays for one script (or one helper container), not two.
 */
export function applyScript(bridge: string, then: string[] = []): string {
  return [
    ...prelude(bridge),
    // ensure FAMILY RULE...: the chain exists with exactly these rules (each there, and no
    // other: a count), else it is rebuilt; and the bridge jumps to it first in PREROUTING.
    "ensure() {",
    "  f=$1; shift",
    "  $f -S $C >/dev/null 2>&1 || $f -N $C || return 1",
    "  ok=1",
    '  [ "$($f -S $C | wc -l)" -eq $(($# + 1)) ] || ok=0',
    '  for r in "$@"; do $f -C $C $r 2>/dev/null || ok=0; done',
    '  if [ $ok = 0 ]; then $f -F $C || return 1; for r in "$@"; do $f -A $C $r || return 1; done; fi',
    '  $f -C PREROUTING -i "$BR" -j $C 2>/dev/null || $f -I PREROUTING 1 -i "$BR" -j $C || return 1',
    "}",
    `command -v iptables >/dev/null 2>&1 || { echo 'no iptables command' >&2; exit ${EXIT.noIptables}; }`,
    "prune v4; [ -e /proc/net/if_inet6 ] && prune v6",
    `ensure v4 ${RULES4.map((r) => `'${r}'`).join(" ")} || exit ${EXIT.v4}`,
    // A kernel without IPv6 has no IPv6 path to guard.
    `if [ -e /proc/net/if_inet6 ]; then ensure v6 ${RULES6.map((r) => `'${r}'`).join(" ")} || exit ${EXIT.v6}; fi`,
    ...then,
    "exit 0",
  ].join("\n");
}

/** The script that removes the bridge's jumps, and any left for bridges that are gone (the shared chain stays for other projects). */
export function removeScript(bridge: string, then: string[] = []): string {
  return [
    ...prelude(bridge),
    "for f in v4 v6; do",
    "  prune $f",
    "  i=0",
    '  while [ $i -lt 20 ] && $f -C PREROUTING -i "$BR" -j $C 2>/dev/null; do $f -D PREROUTING -i "$BR" -j $C || break; i=$((i + 1)); done',
    "done",
    ...then,
    "exit 0",
  ].join("\n");
}

/** Words for a failed run of the script. */
export function failure(code: number, output: string): string {
  const what =
    code === EXIT.noIptables
      ? "there is no iptables command"
      : code === EXIT.v6
        ? "ip6tables failed"
        : code === EXIT.v4
          ? "iptables failed"
          : code === EXIT.fence
            ? "iptables failed setting the project's network fence"
            : `the firewall script exited ${code}`;
  const detail = output.trim().split("\n").filter(Boolean).slice(-2).join("; ").slice(0, 300);
  return detail ? `${what} (${detail})` : what;
}
