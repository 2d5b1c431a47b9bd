/**
 * The commented lazy.toml that `lazy init` writes. Its comments are the schema's own
 * descriptions, so the starter and the validator cannot drift apart.
 */
import type { z } from "zod";
import { Server, ProxyConfig, Container, Profile, Config, Notify } from "./schema";
import { ContainerLimits } from "./limits";

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

function section(name: string, schema: z.ZodType, examples: Record<string, unknown> = {}, skip: string[] = []): string {
  const lines = [`# ${describe(schema)}`, `# [${name}]`];
  for (const [key, field] of Object.entries(shapeOf(schema))) {
    if (skip.includes(key)) continue;
    const value = defaultOf(field) ?? examples[key];
    if (value === undefined || (typeof value === "object" && !Array.isArray(value))) continue;
    lines.push(`# ${key} = ${toml(value)}`.padEnd(40) + ` # ${describe(field)}`);
  }
  return lines.join("\n");
}

export function starter(): string {
  return [
    "# lazy.toml: project settings for lazy. Every key is optional; the commented values are",
    "# the defaults. Uncomment and edit what you want to change. `lazy doctor` checks this file.",
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
    section("container", Container, { image: "node:22-bookworm", setup: "npm ci" }, ["dockerfile"]),
    "",
    section("container.limits", ContainerLimits),
    "",
    section("notify", Notify, { webhook: "https://hooks.example.com/lazy", webhook_credential: "slack-hook" }),
    "",
  ].join("\n");
}
