/**
 * `[[service]]` in lazy.toml: an HTTPS service (a git host, a package registry) whose token the
 * agent never holds. The container gets a placeholder shaped like the token in the places tools
 * look, and lazy's egress proxy swaps in the real one at the last hop, for these hosts only
 * (src/broker). Trust-bearing like the rest of lazy.toml: a service names a command the daemon
 * runs on the host and hosts a secret goes to. The shapes' own hosts and forms are the broker's
 * (broker/shapes.ts); here only what a person writes.
 */
import { z } from "zod";

export const SERVICE_SHAPES = ["github", "gitlab", "npm", "pypi", "oci", "custom"] as const;

const credentialName = z
  .string()
  .regex(/^([a-z0-9][a-z0-9._-]{0,63})$/, 'expected a credential name such as "github" (lazy auth set github)');

/** "90s", "55m", "1h": a command's secret is kept this long, then the command runs again. */
export const DURATION = /^(\d{1,6})(s|m|h)$/;
export const durationMs = (v: string): number => {
  const m = DURATION.exec(v);
  if (!m) return Number.NaN;
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "s" | "m" | "h"];
};

/** A host pattern: a DNS name or address, `*.` for its subdomains, an optional port (443 when none). */
const hostPattern = z
  .string()
  .regex(
    /^(\*\.)?[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*(:\d{1,5})?$/,
    'expected a host such as "github.com", "*.example.com" or "npm.corp:8443" (lower case, no scheme, no path)',
  );

const repo = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/, 'expected a repository as "owner/name"')
  .refine((v) => !v.split("/").some((p) => p === "." || p === ".."), { message: "expected a repository as owner/name" });

export const Service = z
  .strictObject({
    shape: z
      .enum(SERVICE_SHAPES)
      .default("custom")
      .describe(
        "What the service is: github (git over HTTPS, the API and gh), gitlab, npm, pypi, oci (a container registry) or custom; the shape gives hosts, the auth form and where tools look, so a common setup is the shape and a source.",
      ),
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, "expected a name (lowercase letters, digits, - and _)")
      .optional()
      .describe("The service's name in audit rows, net> lines and lazy doctor; the shape's when absent."),
    hosts: z
      .array(hostPattern)
      .min(1)
      .max(32)
      .optional()
      .describe(
        'Hosts whose traffic is brokered (TLS opened by lazy, the placeholder swapped): "git.corp", "*.corp" for subdomains, "npm.corp:8443"; the shape\'s own when absent (github: github.com, api.github.com; npm: registry.npmjs.org; gitlab: gitlab.com; pypi: upload.pypi.org).',
      ),
    url: z
      .string()
      .url()
      .optional()
      .describe(
        "The service's address as tools are told it (a registry's URL, a pypi index's /simple/ URL, a GitHub Enterprise host); the shape's and the first host's when absent.",
      ),
    auth: z
      .enum(["bearer", "basic", "header"])
      .optional()
      .describe(
        "How the service reads its token: bearer (Authorization: Bearer), basic (a user and the token as password) or header; the shape's when absent.",
      ),
    user: z.string().min(1).max(64).optional().describe('The basic-auth user (github: "x-access-token", pypi: "__token__").'),
    header: z
      .string()
      .regex(/^[A-Za-z0-9-]{1,64}$/, "expected a header name")
      .optional()
      .describe('The header the token goes in when auth = "header" (GitLab: "PRIVATE-TOKEN").'),
    credential: credentialName.optional().describe("Source: a stored credential (lazy auth set NAME)."),
    command: z
      .array(z.string().min(1).max(4096))
      .min(1)
      .max(64)
      .optional()
      .describe(
        'Source: a command the daemon runs on the host, never in a container, as an argv list (no shell), e.g. ["gh", "auth", "token"]; its first line of output is the token.',
      ),
    ttl: z
      .string()
      .regex(DURATION, 'expected a duration such as "90s", "55m" or "1h"')
      .default("5m")
      .describe("How long a command's token is kept; the command runs again before then."),
    app: z
      .strictObject({
        id: z.union([z.number().int().positive(), z.string().regex(/^\d{1,12}$/)]).describe("The GitHub App's id."),
        key: credentialName.describe("The credential holding the App's private key (lazy auth set NAME < app.pem)."),
        permissions: z
          .record(z.string().regex(/^[a-z_]{1,64}$/), z.enum(["read", "write"]))
          .default({ contents: "write", metadata: "read", pull_requests: "write" })
          .describe("The permissions each task's installation token gets."),
        api: z
          .string()
          .url()
          .default("https://api.github.com")
          .describe("The GitHub API the tokens are minted at (GitHub Enterprise: https://HOST/api/v3)."),
      })
      .optional()
      .describe(
        "Source: a GitHub App; the daemon mints an installation token per task, scoped to its repositories, and a fresh one before the hour runs out.",
      ),
    repos: z
      .array(repo)
      .max(256)
      .default([])
      .describe("The repositories (owner/name) a task may fetch from and push to through the broker; none: only the project's own origin."),
    push: z
      .boolean()
      .default(false)
      .describe(
        "Let a task push its own branch (refs/heads/lazy/<task>…) through the broker; any other ref is refused. Off: lazy accept is how work reaches a branch.",
      ),
    scopes: z
      .array(z.string().regex(/^@[a-z0-9][a-z0-9._-]{0,213}$/, 'expected an npm scope such as "@acme"'))
      .max(64)
      .default([])
      .describe("npm: the scopes (@acme) that resolve to this registry."),
  })
  .superRefine((s, ctx) => {
    const sources = ["credential", "command", "app"].filter((k) => s[k as keyof typeof s] !== undefined);
    if (sources.length !== 1)
      ctx.addIssue({
        code: "custom",
        message: sources.length
          ? `set one source, not ${sources.join(" and ")}`
          : 'missing: a source (credential = "NAME", command = ["gh", "auth", "token"], or app = { id = …, key = "NAME" })',
      });
    if (s.shape === "custom" && !s.hosts)
      ctx.addIssue({ code: "custom", message: "missing: hosts (a custom service names its hosts)", path: ["hosts"] });
    if (s.shape === "custom" && !s.name)
      ctx.addIssue({ code: "custom", message: "missing: name (a custom service is named)", path: ["name"] });
    if (s.auth === "header" && !s.header)
      ctx.addIssue({ code: "custom", message: 'missing: header (auth = "header" names it)', path: ["header"] });
    if (s.app && s.shape !== "github") ctx.addIssue({ code: "custom", message: 'app is a GitHub App: shape = "github"', path: ["app"] });
    if (s.command && !(durationMs(s.ttl) >= 10_000))
      ctx.addIssue({ code: "custom", message: "expected a ttl of at least 10s", path: ["ttl"] });
  })
  .describe("A brokered service: its hosts, the form its token takes, and where the daemon gets the token.");

export type Service = z.infer<typeof Service>;

export const Services = z
  .array(Service)
  .max(32)
  .default([])
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      const name = s.name ?? s.shape;
      if (seen.has(name))
        ctx.addIssue({ code: "custom", path: [i, "name"], message: `a second service named "${name}": give each its own name` });
      seen.add(name);
    });
  })
  .describe("Brokered services ([[service]]): git hosts and registries whose tokens the daemon holds and lazy's egress proxy swaps in.");
