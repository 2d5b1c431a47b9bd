/**
 * lazy.toml's `[[service]]` tables resolved with their shape's defaults (shapes.ts), and which
 * service a host belongs to. A host pattern is a name (or address), `*.name` for every name
 * below it (not the name itself), and a port (443 when none): a service answers on that port
 * only, so `github.com:22` and a plain-HTTP `:80` stay ordinary egress.
 */
import { type Config, durationMs } from "../config";
import { type PlaceholderShape, SHAPES } from "./shapes";
import type { Service } from "./types";

export function servicesOf(config: Config): Service[] {
  return config.service.map((s) => {
    const shape = SHAPES[s.shape];
    const hosts = s.hosts ?? shape.hosts;
    const auth: Service["auth"] =
      s.auth === "header"
        ? { kind: "header", name: s.header! }
        : s.auth === "bearer"
          ? { kind: "bearer" }
          : s.auth === "basic" || (!s.auth && shape.auth.kind === "basic")
            ? { kind: "basic", user: s.user ?? (shape.auth.kind === "basic" ? shape.auth.user : "lazy") }
            : shape.auth;
    const source: Service["source"] = s.app
      ? { kind: "app", appId: String(s.app.id), key: s.app.key, permissions: s.app.permissions, api: s.app.api.replace(/\/+$/, "") }
      : s.command
        ? { kind: "command", argv: s.command, ttlMs: durationMs(s.ttl) }
        : { kind: "credential", name: s.credential! };
    const first = hosts[0]!.replace(/^\*\./, "");
    return {
      name: s.name ?? s.shape,
      shape: s.shape,
      hosts,
      auth,
      source,
      repos: s.repos.map((r) => r.toLowerCase().replace(/\.git$/, "")),
      push: s.push,
      scopes: s.scopes,
      url: s.url ?? (s.hosts ? null : shape.url) ?? `https://${first}${s.shape === "npm" ? "/" : ""}`,
    };
  });
}

/** Whether `pattern` covers host:port. */
export function covers(pattern: string, host: string, port: number): boolean {
  const m = /^(.*?)(?::(\d+))?$/.exec(pattern)!;
  const name = m[1]!;
  if (Number(m[2] ?? 443) !== port) return false;
  const h = host.toLowerCase().replace(/\.$/, "");
  return name.startsWith("*.") ? h.endsWith(name.slice(1)) && h.length > name.length - 1 : h === name;
}

/** The service brokering host:port, if any. */
export function serviceFor(services: readonly Service[], host: string, port: number): Service | undefined {
  return services.find((s) => s.hosts.some((p) => covers(p, host, port)));
}

/** The placeholder a task holds for the service: shaped like the token it stands for. */
export function placeholderShape(s: Service): PlaceholderShape {
  return s.source.kind === "app" ? "github-app" : SHAPES[s.shape].placeholder;
}

/** Whether git's smart HTTP runs against the service (a credential helper, the push rule). */
export const speaksGit = (s: Service): boolean => SHAPES[s.shape].git;

/** Every host pattern of every service, for the broker's certificate. */
export const allHosts = (services: readonly Service[]): string[] => [
  ...new Set(services.flatMap((s) => s.hosts.map((h) => h.replace(/:\d+$/, "")))),
];
