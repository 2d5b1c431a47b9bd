/**
 * What a credential is, told from its name and value alone: the name rules, the kind a value's
 * shape reveals, the env var a standard name falls back to, and the public (non-secret) shape
 * `lazy auth list` and the daemon report.
 */
import { z } from "zod";
import { isStoredKey, looksLikePem } from "./private-key";

export type Backend = "keychain" | "secret-service" | "file";
export const BACKENDS: readonly Backend[] = ["keychain", "secret-service", "file"];

export const CredentialKind = z
  .enum(["api-key", "oauth-token", "private-key", "unknown"])
  .describe("What the value is, told from its shape: a provider API key, an OAuth token, a private key (a GitHub App's), or none of these");
export type CredentialKind = z.infer<typeof CredentialKind>;

export const CredentialInfo = z
  .object({
    name: z.string().describe('The credential\'s name: "anthropic", "openai", "work-openai", ...'),
    kind: CredentialKind,
    source: z.enum(["keychain", "secret-service", "file", "env"]).describe("Where the value in use comes from"),
    envVar: z.string().optional().describe('When source is "env": the daemon environment variable that supplies it'),
    setAt: z.string().nullable().describe("ISO time it was stored; null when it comes from the environment or was stored outside lazy"),
    last4: z.string().describe("At most the last 4 characters of the value (empty for a short value), nothing more"),
    expiresAt: z.string().optional().describe("ISO time the token lapses, when lazy knows it (stored from Claude Code's OAuth JSON)"),
  })
  .describe("A credential as lazy reports it: never the value");
export type CredentialInfo = z.infer<typeof CredentialInfo>;

/** Standard names and the daemon-environment variable each falls back to when not stored. */
export const STANDARD: Record<string, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  openrouter: "OPENROUTER_API_KEY",
  cursor: "CURSOR_API_KEY",
  ollama: "OLLAMA_API_KEY",
};

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Names are also keychain accounts and `security -i` words, so the alphabet stays plain. */
export function validName(name: string): boolean {
  return NAME.test(name);
}

// Order matters: the Anthropic prefixes are more specific than the bare `sk-`.
const PREFIXES: ReadonlyArray<readonly [string, CredentialKind]> = [
  ["sk-ant-oat", "oauth-token"],
  ["sk-ant-api", "api-key"],
  ["sk-proj-", "api-key"],
  ["sk-or-v1-", "api-key"],
  ["sk-", "api-key"],
  ["crsr_", "api-key"],
  ["key_", "api-key"],
];

export function kindOf(value: string): CredentialKind {
  if (isStoredKey(value)) return "private-key";
  for (const [prefix, kind] of PREFIXES) if (value.startsWith(prefix)) return kind;
  return "unknown";
}

/**
 * The tail `list` may show. A short value shows nothing: four characters of an eight-character
 * secret are half of it.
 */
export function last4(value: string): string {
  // A private key's tail is key material, not an identifier: nothing of it is shown.
  if (isStoredKey(value)) return "";
  return value.length >= 12 ? value.slice(-4) : "";
}

// A value goes into an HTTP header on every proxied request: printable ASCII, no spaces, so
// a pasted newline can never split a header.
const VALUE = /^[\x21-\x7e]{1,8192}$/;

/** Whether a value can be used as a credential (never says why in terms of the value itself). */
export function validValue(value: string): boolean {
  return VALUE.test(value);
}

/**
 * A value read from outside lazy (the environment, `secret-tool store` fed by `echo`) often
 * carries a trailing newline; trim it, and refuse anything still unusable.
 */
export function cleanOutside(value: string | null | undefined): string | undefined {
  const v = value?.trim();
  return v && validValue(v) ? v : undefined;
}

/** How each standard name's value begins, to warn on a pasted key of another provider (never said back). */
const SHAPES: Record<string, { ok: (v: string) => boolean; looks: string }> = {
  anthropic: {
    ok: (v) => v.startsWith("sk-ant-"),
    looks: "an Anthropic key starts sk-ant-api (API key) or sk-ant-oat (Claude login token)",
  },
  openai: {
    ok: (v) => v.startsWith("sk-") && !v.startsWith("sk-ant-") && !v.startsWith("sk-or-"),
    looks: "an OpenAI key starts sk- or sk-proj- (not sk-ant-, not sk-or-)",
  },
  openrouter: { ok: (v) => v.startsWith("sk-or-"), looks: "an OpenRouter key starts sk-or-v1-" },
  cursor: { ok: (v) => v.startsWith("crsr_") || v.startsWith("key_"), looks: "a Cursor key starts crsr_ or key_" },
};

/**
 * What `lazy auth set` warns of before storing: a name that is no provider lazy knows (it is
 * used only where lazy.toml names it), or a value whose shape is another provider's. The value
 * itself is never part of a warning.
 */
export function setWarnings(name: string, value: string): string[] {
  // A private key is used where a [[service]] names it (key = "NAME"), by any name.
  if (looksLikePem(value) || isStoredKey(value)) return [];
  const out: string[] = [];
  if (!(name in STANDARD))
    out.push(
      `"${name}" is not a provider name lazy knows (${Object.keys(STANDARD).join(", ")}): a profile uses it only where lazy.toml names it (credential = "${name}").`,
    );
  const shape = SHAPES[name];
  if (shape && !shape.ok(value)) out.push(`The value does not look like a key for ${name} (${shape.looks}); stored anyway.`);
  return out;
}
