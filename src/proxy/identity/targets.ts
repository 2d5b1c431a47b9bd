/**
 * Where each caller's traffic goes and which credential it carries there. Per-target
 * credentials are data: a map keyed by origin (scheme + host + port) that the built-in
 * providers, profile endpoints and fallbacks all enter under the same rules. A profile that
 * names a credential gets it; one that does not inherits its origin's, or the one inferred
 * from its hostname. An origin declared `credential = "none"` that is already credentialed
 * stops the daemon from starting: that map would not mean what it says.
 */
import { type Config, profileNames, type ResolvedProfile, resolveProfile } from "../../config";
import { LazyError } from "../../util/errors";

/** The two wire formats the proxy speaks (the forwarding surface, request/surface.ts, is per kind). */
export type Wire = "anthropic" | "openai";
/** What an upstream is, which decides its forwarding surface. */
export type UpstreamKind = "anthropic-primary" | "anthropic-profile" | "openai";

export const BUILTIN = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com",
  cursor: "https://api2.cursor.sh",
} as const;

export interface Target {
  /** Who failed, in errors: "Anthropic", "OpenAI", "Cursor", "OpenRouter", or `endpoint of profile X`. */
  provider: string;
  /** scheme://host[:port] — the credential map's key. */
  origin: string;
  /** The endpoint with its path prefix and no trailing slash; the request path is appended. */
  base: string;
  kind: UpstreamKind | "cursor";
  wire: Wire | "cursor";
  /** The credential slot sent there; null: none at all. */
  credential: string | null;
  /** How the credential is sent: Anthropic's forms (x-api-key, or Bearer for OAuth), or Bearer. */
  style: "anthropic" | "bearer";
  /** No credential is mapped for this endpoint (an unknown host and none named): requests get a 401 naming the fix. */
  unmapped?: string;
  /** A profile's pinned models (`models = [...]`): a request for any other is refused (request/model.ts). */
  models?: readonly string[];
}

const originOf = (url: string) => new URL(url).origin;
const trimSlash = (s: string) => s.replace(/\/+$/, "");

function isLocalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return (
    h === "localhost" ||
    h.endsWith(".localhost") ||
    h === "::1" ||
    h === "0.0.0.0" ||
    h === "host.docker.internal" ||
    h.endsWith(".local") ||
    /^127\./.test(h) ||
    /^10\./.test(h) ||
    /^192\.168\./.test(h) ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(h)
  );
}

const hostIs = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

/** The credential an endpoint gets when nobody names one: by its hostname, never by its wire. */
export function inferCredential(url: string): string | null | undefined {
  const host = new URL(url).hostname;
  if (isLocalHost(host)) return null; // a model server you run: no credential at all
  if (hostIs(host, "ollama.com")) return "ollama";
  if (hostIs(host, "anthropic.com")) return "anthropic";
  if (hostIs(host, "openai.com")) return "openai";
  if (hostIs(host, "openrouter.ai")) return "openrouter";
  if (hostIs(host, "cursor.sh")) return "cursor";
  return undefined; // unknown host: no credential mapped (a 401 names the slot to set)
}

function providerName(url: string, profile?: string): string {
  const host = new URL(url).hostname;
  if (hostIs(host, "anthropic.com")) return "Anthropic";
  if (hostIs(host, "openai.com")) return "OpenAI";
  if (hostIs(host, "openrouter.ai")) return "OpenRouter";
  if (hostIs(host, "ollama.com")) return "Ollama";
  if (hostIs(host, "cursor.sh")) return "Cursor";
  return profile ? `endpoint of profile ${profile}` : host;
}

/** The hosted providers a profile reaches by its endpoint, whose origin `[proxy.upstreams]` can replace (keyed by provider). */
const HOSTED = [
  ["ollama", "ollama.com"],
  ["openrouter", "openrouter.ai"],
] as const;

/**
 * Where an endpoint's requests really go: a hosted provider's origin replaced by its
 * `[proxy.upstreams]` override (a gateway, or a test server), the path kept. Which credential it
 * bills is still read from the endpoint as written, so an override on loopback does not turn
 * hosted Ollama into a local one that needs none.
 */
function routed(url: string, up: Config["proxy"]["upstreams"]): string {
  const u = new URL(url);
  for (const [name, domain] of HOSTED) {
    const to = up[name];
    if (to && hostIs(u.hostname, domain)) return trimSlash(originOf(to) + u.pathname);
  }
  return trimSlash(url);
}

type Entry = { credential: string | null; by: string; explicit: boolean };

export class Targets {
  private constructor(
    private readonly anthropic: Target,
    private readonly cursorTarget: Target,
    private readonly profiles: Map<string, Target>,
  ) {}

  static build(config: Config): Targets {
    const map = new Map<string, Entry>();
    const enter = (url: string, credential: string | null, by: string, explicit: boolean) => {
      const origin = originOf(url);
      const prev = map.get(origin);
      if (!prev) return void map.set(origin, { credential, by, explicit });
      const declaredNone = (e: Entry) => e.explicit && e.credential === null;
      if ((declaredNone(prev) && credential !== null) || (explicit && credential === null && prev.credential !== null))
        throw new LazyError(
          "config_invalid",
          `lazy.toml: ${explicit && credential === null ? by : prev.by} declares credential = "none" for ${origin}, which ${explicit && credential === null ? prev.by : by} already sends the "${(credential ?? prev.credential)!}" credential to; give them different origins or the same credential.`,
        );
    };

    const up = config.proxy.upstreams;
    const builtin = (
      name: keyof typeof BUILTIN,
      provider: string,
      kind: Target["kind"],
      wire: Target["wire"],
      style: Target["style"],
    ): Target => {
      const base = trimSlash(up[name] ?? BUILTIN[name]);
      enter(base, name, `the ${provider} upstream`, false);
      return { provider, origin: originOf(base), base, kind, wire, credential: name, style };
    };
    const anthropic = builtin("anthropic", "Anthropic", "anthropic-primary", "anthropic", "anthropic");
    const openai = builtin("openai", "OpenAI", "openai", "openai", "bearer");
    const cursor = builtin("cursor", "Cursor", "cursor", "cursor", "bearer");

    const named = (c: string | undefined) => (c === undefined ? undefined : c === "none" ? null : c);
    const resolved: ResolvedProfile[] = profileNames(config).map((n) => resolveProfile(config, n));
    for (const p of resolved)
      if (p.endpoint) {
        const c = named(p.credential);
        if (c !== undefined) enter(routed(p.endpoint, up), c, `profile ${p.name}`, true);
      }
    config.proxy.fallback.forEach((f, i) => {
      const c = named(f.credential);
      enter(
        routed(f.endpoint, up),
        c === undefined ? (inferCredential(f.endpoint) ?? null) : c,
        `fallback ${f.name} (proxy.fallback[${i}])`,
        c !== undefined,
      );
    });

    const profiles = new Map<string, Target>();
    for (const p of resolved) {
      if (p.harness === "cursor") {
        profiles.set(p.name, { ...cursor, credential: named(p.credential) ?? cursor.credential });
        continue;
      }
      const fallbackTarget = p.wire === "openai" ? openai : anthropic;
      if (!p.endpoint || originOf(p.endpoint) === fallbackTarget.origin) {
        const base = p.endpoint ? trimSlash(p.endpoint) : fallbackTarget.base;
        const c = named(p.credential);
        profiles.set(p.name, { ...fallbackTarget, base, credential: c === undefined ? fallbackTarget.credential : c });
        continue;
      }
      const declared = trimSlash(p.endpoint);
      const base = routed(declared, up);
      const origin = originOf(base);
      const explicit = named(p.credential);
      // A hosted provider's override is still that provider: its credential comes from the endpoint as written.
      const hosted = base !== declared;
      const credential =
        explicit !== undefined ? explicit : map.has(origin) && !hosted ? map.get(origin)!.credential : (inferCredential(declared) ?? null);
      const isAnthropicHost = hostIs(new URL(base).hostname, "anthropic.com");
      profiles.set(p.name, {
        provider: providerName(declared, p.name),
        origin,
        base,
        kind: p.wire === "openai" ? "openai" : isAnthropicHost ? "anthropic-primary" : "anthropic-profile",
        wire: p.wire === "openai" ? "openai" : "anthropic",
        credential,
        style: isAnthropicHost ? "anthropic" : "bearer",
      });
      if (inferCredential(declared) === undefined && explicit === undefined && !map.has(origin))
        profiles.get(p.name)!.unmapped = `set credential = "NAME" (or "none") under [profiles.${p.name}] in lazy.toml`;
    }
    for (const p of resolved) if (p.models && p.harness !== "cursor") profiles.get(p.name)!.models = p.models;
    return new Targets(anthropic, cursor, profiles);
  }

  /** Where traffic with no grant goes. */
  primary(): Target {
    return this.anthropic;
  }

  cursor(): Target {
    return this.cursorTarget;
  }

  forProfile(name: string): Target | undefined {
    return this.profiles.get(name);
  }
}
