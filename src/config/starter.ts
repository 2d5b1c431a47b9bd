/**
 * The commented lazy.toml that `lazy init` writes. Its comments are the schema's own
 * descriptions, so the starter and the validator cannot drift apart.
 */
import type { z } from "zod";
import { ContainerLimits } from "./limits";
import { Config, Container, DEFAULT_BASE, Notify, Profile, ProxyConfig, Server } from "./schema";

type Def = { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType; defaultValue?: unknown };
const def = (t: z.ZodType) => (t as unknown as { def: Def }).def;
const describe = (t: z.ZodType) => (t as unknown as { description?: string }).description ?? "";

function defaultOf(t: z.ZodType): unknown {
  const d = def(t);
  if (d.type === "default") return typeof d.defaultValue === "function" ? (d.defaultValue as () => unknown)() : d.defaultValue;
  return undefined;
}

function shapeOf(t: z.ZodType): Record<string, z.ZodType> {
  let d = def(t);
  while (!d.shape && d.innerType) d = def(d.innerType);
  return d.shape ?? {};
}

const toml = (v: unknown): string =>
  typeof v === "string" ? JSON.stringify(v) : Array.isArray(v) ? `[${v.map(toml).join(", ")}]` : String(v);

/**
 * A commented table: each key with its default, or with an example (marked "e.g.") where it has
 * none. `defaults` are the ones lazy applies in code rather than in the schema (an unset key that
 * means something, like [container] base).
 */
function section(
  name: string,
  schema: z.ZodType,
  examples: Record<string, unknown> = {},
  skip: string[] = [],
  defaults: Record<string, unknown> = {},
): string {
  const lines = [`# ${describe(schema)}`, `# [${name}]`];
  for (const [key, field] of Object.entries(shapeOf(schema))) {
    if (skip.includes(key)) continue;
    const fixed = defaultOf(field) ?? defaults[key];
    const value = fixed ?? examples[key];
    if (value === undefined || (typeof value === "object" && !Array.isArray(value))) continue;
    lines.push(`# ${key} = ${toml(value)}`.padEnd(40) + ` # ${fixed === undefined ? "(example) " : ""}${describe(field)}`);
  }
  return lines.join("\n");
}

export function starter(): string {
  return [
    "# lazy.toml: project settings for lazy. Every key is optional; the commented values are",
    "# the defaults, or an example (marked so) where a key has none. Uncomment and edit what you want",
    "# to change. `lazy doctor` checks this file.",
    "",
    section("server", Server),
    "",
    section("proxy", ProxyConfig, {}, ["audit", "upstreams", "fallback", "plugins"]),
    "",
    `# ${describe(shapeOf(Config).models ?? Config)}`,
    "# [models.roles]",
    '# agent = "claude"                      # Profile used for tasks that name none.',
    "",
    `# ${describe(Profile)}`,
    "# [profiles.local]",
    section("profiles.local", Profile, {
      harness: "claude",
      model: "qwen3-coder",
      endpoint: "http://127.0.0.1:11434",
      wire: "anthropic",
      credential: "none",
    })
      .split("\n")
      .slice(2)
      .join("\n"),
    "",
    // Unless image or dockerfile is set, lazy builds its own task image FROM base: say so first.
    section("container", Container, { image: "node:22-bookworm", dockerfile: "Dockerfile", setup: "npm ci" }, [], {
      base: DEFAULT_BASE,
    }).replace(
      /^(# .*)$/m,
      `$1 By default lazy builds its own task image FROM base (${DEFAULT_BASE}), adding git, node and the harnesses; image or dockerfile (one of them) replaces it.`,
    ),
    "",
    section("container.limits", ContainerLimits),
    "",
    section("notify", Notify, { webhook: "https://hooks.example.com/lazy", webhook_credential: "slack-hook" }),
    "",
  ].join("\n");
}
