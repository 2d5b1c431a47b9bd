/**
 * The project's network fence: what a task container may reach on or through the host. Under
 * `[container] network = "allowlist"` (and "observe") a container reaches only the gateway's
 * model proxy and MCP port and lazy's egress proxy port; under "none" only the model proxy;
 * everything else it sends (other host ports, host services on 0.0.0.0, other projects'
 * gateways, other containers, the internet directly) is dropped where it enters the host from
 * the project's bridge. "open" removes the fence (the link-local guard stays).
 *
 * Built on the link-local guard's mechanism (link-local.ts): raw-table PREROUTING, a jump per
 * bridge (`-i <bridge>`), run in the same script (on the host as root, else in the helper
 * container). Each project has its own chain, LAZY-FENCE-<bridge>, because its rules name its
 * gateway and ports. Every rule is a DROP, so order does not matter and "each rule is there and
 * nothing else" (-C and a count) proves the chain right; when the ports change (a restarted
 * daemon) the chain is rebuilt behind a DROP-everything guard, so it is never open meanwhile.
 * The lines below run after link-local.ts's prelude (its v4/v6 functions and $BR).
 *
 * IPv4 only: lazy makes its networks without IPv6, so a container has only link-local IPv6
 * addresses, and the link-local guard already drops all of that but neighbour discovery.
 * Each step costs a launch (the script runs before every turn): chains of bridges that are
 * gone are pruned when a network is removed, not on every run.
 */

export const PREFIX = "LAZY-FENCE-";

export type Mode = "allowlist" | "observe" | "none" | "open";

/** What the fence lets through to the gateway. */
export interface Spec {
  mode: Mode;
  gateway: string;
  /** TCP ports on the gateway a container may reach (the model proxy's; the egress proxy's too unless "none"). */
  ports: number[];
}

/** The outcome for a project, as the daemon reports it. */
export type State =
  | { state: "fenced"; mode: Exclude<Mode, "open">; bridge: string; ports: number[] }
  | { state: "open" }
  | { state: "unfenced"; reason: string; remedy: string };

const IPV4 = /^(\d{1,3})(\.\d{1,3}){3}$/;

export function rules4(spec: Spec): string[] {
  if (!IPV4.test(spec.gateway)) throw new Error(`not an IPv4 gateway: ${JSON.stringify(spec.gateway)}`);
  const ports = spec.ports.filter((p) => Number.isInteger(p) && p > 0 && p < 65536);
  if (!ports.length) throw new Error("the fence needs at least the model proxy's port");
  const g = `${spec.gateway}/32`;
  return [`! -d ${g} -j DROP`, `-d ${g} ! -p tcp -j DROP`, `-d ${g} -p tcp -m multiport ! --dports ${ports.join(",")} -j DROP`];
}

/** Shell functions shared by applying and removing (after link-local.ts's prelude). */
const functions = () => [
  `FC="${PREFIX}$BR"`,
  // unfence FAMILY: the bridge's jumps, a guard a killed run left, and the chain go.
  "unfence() {",
  "  f=$1; i=0",
  '  while [ $i -lt 20 ] && $f -C PREROUTING -i "$BR" -j "$FC" 2>/dev/null; do $f -D PREROUTING -i "$BR" -j "$FC" || break; i=$((i + 1)); done',
  '  $f -D PREROUTING -i "$BR" -j DROP 2>/dev/null',
  '  if $f -S "$FC" >/dev/null 2>&1; then $f -F "$FC"; $f -X "$FC"; fi',
  "  return 0",
  "}",
  // prunefence FAMILY: chains (and jumps) of bridges that are gone.
  "prunefence() {",
  "  $1 -S 2>/dev/null | while read -r a c rest; do",
  '    [ "$a" = "-N" ] || continue',
  `    case "$c" in ${PREFIX}*) ;; *) continue ;; esac`,
  `    b=\${c#${PREFIX}}`,
  "    case \"$b\" in '' | *[!A-Za-z0-9_.-]*) continue ;; esac",
  '    [ -e "/sys/class/net/$b" ] && continue',
  "    (BR=$b; FC=$c; unfence $1)",
  "  done",
  "}",
  // fence FAMILY RULE...: the chain holds exactly these rules and the bridge jumps to it.
  "fence() {",
  "  f=$1; shift",
  '  $f -S "$FC" >/dev/null 2>&1 || $f -N "$FC" || return 1',
  "  ok=1",
  '  [ "$($f -S "$FC" | wc -l)" -eq $(($# + 1)) ] || ok=0',
  '  for r in "$@"; do $f -C "$FC" $r 2>/dev/null || ok=0; done',
  "  if [ $ok = 0 ]; then",
  '    $f -I PREROUTING 1 -i "$BR" -j DROP || return 1',
  '    $f -F "$FC" || return 1',
  '    for r in "$@"; do $f -A "$FC" $r || return 1; done',
  '    $f -C PREROUTING -i "$BR" -j "$FC" 2>/dev/null || $f -I PREROUTING 1 -i "$BR" -j "$FC" || return 1',
  '    $f -D PREROUTING -i "$BR" -j DROP',
  "  fi",
  '  $f -C PREROUTING -i "$BR" -j "$FC" 2>/dev/null || $f -I PREROUTING 1 -i "$BR" -j "$FC" || return 1',
  "  return 0",
  "}",
];

/**
 * Steps for link-local.ts's applyScript: set the bridge's fence to `spec` (or remove it for
 * "open"). A failed step exits `exitCode`; the guard rule it may leave (DROP everything from
 * the bridge) fails closed until the next run repairs it.
 */
export function applyLines(spec: Spec, exitCode: number): string[] {
  const q = (r: string) => `'${r}'`;
  return [...functions(), ...(spec.mode === "open" ? ["unfence v4"] : [`fence v4 ${rules4(spec).map(q).join(" ")} || exit ${exitCode}`])];
}

/** Steps for link-local.ts's removeScript: the bridge is going, so does its fence. */
export function removeLines(): string[] {
  return [...functions(), "prunefence v4; unfence v4"];
}
