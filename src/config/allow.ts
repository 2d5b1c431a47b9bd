/**
 * The grammar of a `[container] allow` entry (where a task container may reach through lazy's
 * egress proxy), and the built-in list of package registries and git hosts. One place: the
 * schema validates entries with it and the egress proxy (src/egress) matches with it.
 *
 *   host            example.org      ports 443 and 80
 *   host:port       example.org:8443 that port only
 *   *.domain[:port] *.example.org    any name below example.org (not example.org itself)
 *
 * A host is a DNS name or an IPv4 address, matched case-insensitively and exactly (no
 * resolution: 10.0.0.5 does not allow a name that resolves there). IPv6 literals are not
 * supported.
 */

export interface AllowEntry {
  /** Lowercase host, or the domain below which any name matches (wildcard). */
  host: string;
  wildcard: boolean;
  /** null: 443 and 80. */
  port: number | null;
}

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/** A host as a client names it (lowercase, no trailing dot), or null when it is no DNS name or IPv4 address. */
export function hostOf(raw: string): string | null {
  const h = raw.toLowerCase().replace(/\.$/, "");
  if (h.length > 253) return null;
  return IPV4.test(h) || NAME.test(h) ? h : null;
}

/** An entry, or why it does not parse. */
export function parseAllow(raw: string): AllowEntry | { error: string } {
  const m = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(raw.trim());
  const bad = {
    error: `expected "host", "host:port" or "*.domain" (e.g. "registry.npmjs.org", "example.org:8443"), got ${JSON.stringify(raw)}`,
  };
  if (!m) return bad;
  const host = hostOf(m[2]!);
  if (!host || (m[1] && IPV4.test(host))) return bad;
  const port = m[3] === undefined ? null : Number(m[3]);
  if (port !== null && (port < 1 || port > 65535)) return { error: `port ${port} in ${JSON.stringify(raw)} is not 1-65535` };
  return { host, wildcard: !!m[1], port };
}

/** Whether `host:port` is allowed by one entry. */
export function allows(e: AllowEntry, host: string, port: number): boolean {
  if (e.port === null ? port !== 443 && port !== 80 : port !== e.port) return false;
  return e.wildcard ? host.endsWith(`.${e.host}`) : host === e.host;
}

/** Common package registries and git hosts: what installs and clones need over HTTPS. */
export const DEFAULT_ALLOW = [
  // npm, yarn (Bun and pnpm use the npm registry)
  "registry.npmjs.org",
  "registry.yarnpkg.com",
  // Python
  "pypi.org",
  "files.pythonhosted.org",
  // Debian, Ubuntu, Alpine packages
  "deb.debian.org",
  "security.debian.org",
  "archive.ubuntu.com",
  "security.ubuntu.com",
  "ports.ubuntu.com",
  "dl-cdn.alpinelinux.org",
  // git hosts
  "github.com",
  "api.github.com",
  "codeload.github.com",
  "objects.githubusercontent.com",
  "raw.githubusercontent.com",
  "gitlab.com",
  "bitbucket.org",
  // Rust, Go, Ruby, Java
  "crates.io",
  "static.crates.io",
  "index.crates.io",
  "proxy.golang.org",
  "sum.golang.org",
  "rubygems.org",
  "index.rubygems.org",
  "repo.maven.apache.org",
  "repo1.maven.org",
] as const;
