/**
 * The commented lazy.toml that `lazy init` writes: every table and every key of the schema
 * (reference.ts reads them off it), each with its description and its default, or an example
 * (marked so) where it has none. Nothing here lists keys by hand, so a key added to the schema
 * shows here and in docs/config.md at once; only the examples are written here.
 */
import { type Key, tables, tomlValue } from "./reference";
import { DEFAULT_BASE } from "./schema";

/** A value to show for a key that has no default, by its path. */
const EXAMPLES: Record<string, unknown> = {
  "proxy.remote_bind": "192.168.1.20",
  "proxy.upstreams.anthropic": "https://llm-gateway.example.com",
  "proxy.upstreams.openai": "https://llm-gateway.example.com",
  "proxy.upstreams.cursor": "https://cursor-gateway.example.com",
  "proxy.upstreams.ollama": "https://ollama.example.com",
  "proxy.upstreams.openrouter": "https://openrouter-gateway.example.com",
  "proxy.fallback.name": "bedrock",
  "proxy.fallback.endpoint": "https://bedrock-gateway.example.com",
  "proxy.fallback.wire": "anthropic",
  "proxy.fallback.credential": "bedrock",
  "proxy.fallback.model": "claude-sonnet-4-5",
  "proxy.plugins.name": "redact",
  "proxy.plugins.path": "redact.ts",
  "profiles.NAME.harness": "claude",
  "profiles.NAME.model": "qwen3-coder",
  "profiles.NAME.models": ["qwen3-coder"],
  "profiles.NAME.endpoint": "http://127.0.0.1:11434",
  "profiles.NAME.wire": "anthropic",
  "profiles.NAME.credential": "none",
  "models.roles.agent": "claude",
  "models.roles.builder": "claude",
  "container.image": "node:22-bookworm",
  "container.dockerfile": "Dockerfile",
  "container.setup": "npm ci",
  "usage_pause.threshold": 90,
  'usage_pause."5h"': 80,
  'usage_pause."7d"': 95,
  "budget.per_task_tokens": 5_000_000,
  "budget.per_day_tokens": 50_000_000,
  "budget.per_task_usd": 5,
  "budget.per_day_usd": 50,
  "prices.NAME.input": 1,
  "prices.NAME.output": 4,
  "prices.NAME.cache_read": 0.1,
  "prices.NAME.cache_write": 1.25,
  "notify.webhook": "https://hooks.example.com/lazy",
  "notify.webhook_credential": "slack-hook",
  "review.check": "bun test",
  "telemetry.otlp": "http://127.0.0.1:4318",
  "service.name": "github",
  "service.hosts": ["github.com", "api.github.com"],
  "service.url": "https://github.com",
  "service.auth": "basic",
  "service.user": "x-access-token",
  "service.header": "PRIVATE-TOKEN",
  "service.credential": "github",
  "service.command": ["gh", "auth", "token"],
  "service.app.id": 123456,
  "service.app.key": "github-app-key",
};

/** What a table is called in the starter: a named one gets an example name. */
const NAMES: Record<string, string> = { "profiles.NAME": "profiles.local", "prices.NAME": 'prices."qwen3-coder"' };

/** A sentence a table's description needs in the starter, beyond the schema's. */
const NOTES: Record<string, string> = {
  container: `By default lazy builds its own task image FROM base (${DEFAULT_BASE}), adding git, node and the harnesses; image or dockerfile (one of them) replaces it.`,
};

/** Prose as `##` lines of at most ~100 columns; a `# key = value` line is one to uncomment. */
function comment(text: string, width = 98): string[] {
  const out: string[] = [];
  let line = "##";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.length + 1 + word.length > width && line !== "##") {
      out.push(line);
      line = "##";
    }
    line += ` ${word}`;
  }
  if (line !== "##") out.push(line);
  return out;
}

function keyLines(k: Key): string[] {
  const example = EXAMPLES[k.path];
  const value = k.default ?? (example !== undefined ? tomlValue(example) : undefined);
  const mark = k.required ? "(required) " : k.default === undefined ? "(unset by default; an example) " : "";
  return [...comment(`${mark}${k.description}`), `# ${k.name} = ${value ?? '""'}`];
}

export function starter(): string {
  const lines = [
    "## lazy.toml: project settings for lazy. Every key is optional unless marked required; the",
    "## commented values are the defaults, or an example (marked so) where a key has none. Lines",
    "## starting with one # are settings: uncomment and edit what you want to change. `lazy doctor`",
    "## checks this file; docs/config.md in lazy's repository describes every key.",
  ];
  for (const t of tables()) {
    if (!t.keys.length) continue; // a table of tables only ([models]): its tables follow
    const name = NAMES[t.name] ?? t.name;
    lines.push("", ...comment([t.description, NOTES[t.name]].filter(Boolean).join(" ")), `# ${t.array ? `[[${name}]]` : `[${name}]`}`);
    for (const k of t.keys) lines.push(...keyLines(k));
  }
  return `${lines.join("\n")}\n`;
}
