/**
 * When a stored OAuth token lapses, where lazy can know it: Claude Code keeps its login as JSON
 * (`~/.claude/.credentials.json`, or the macOS Keychain item "Claude Code-credentials") with the
 * access token and `expiresAt` (ms). `lazy auth set anthropic` takes that JSON as it is, stores
 * the access token, and keeps the expiry here, in `<home>/credentials/expiry.json` (0600): a
 * name, the time, and a short hash of the value it belongs to, so a value replaced outside lazy
 * (secret-tool, another daemon) never inherits an old expiry. Nothing here is a secret; the hash
 * is of a random token and cut to 64 bits.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { ensurePrivateDir, readOwn, writeFileAtomic } from "../util/files";

/** The access token and its expiry, when `text` is Claude Code's OAuth JSON; null when it is JSON of another shape; undefined when it is no JSON. */
export function fromClaudeJson(text: string): { token: string; expiresAt: number | null } | null | undefined {
  if (!text.trimStart().startsWith("{")) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  const o = (doc as { claudeAiOauth?: unknown })?.claudeAiOauth ?? doc;
  if (!o || typeof o !== "object") return null;
  const { accessToken, expiresAt } = o as { accessToken?: unknown; expiresAt?: unknown };
  if (typeof accessToken !== "string" || !accessToken) return null;
  const at = typeof expiresAt === "number" && Number.isFinite(expiresAt) && expiresAt > 0 ? expiresAt : null;
  // Seconds rather than milliseconds (a hand-written file): anything before 2001 in ms is seconds.
  return { token: accessToken, expiresAt: at === null ? null : at < 1e12 ? at * 1000 : at };
}

type Record_ = { expiresAt: number; of: string };

const fingerprint = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 16);

export class Expiries {
  private readonly file: string;
  private records: Record<string, Record_>;

  constructor(home: string) {
    this.file = join(home, "credentials", "expiry.json");
    const read = readOwn(this.file);
    let parsed: Record<string, Record_> = {};
    if (read && "text" in read)
      try {
        parsed = JSON.parse(read.text) as Record<string, Record_>;
      } catch {}
    this.records = parsed;
  }

  /** The expiry (ms) of `value` stored as `name`, when lazy was told it. */
  of(name: string, value: string): number | undefined {
    const r = this.records[name];
    return r && r.of === fingerprint(value) ? r.expiresAt : undefined;
  }

  /** Keep (or, with null, forget) the expiry of the value just stored as `name`. */
  set(name: string, value: string, expiresAt: number | null): void {
    const next = { ...this.records };
    if (expiresAt === null) delete next[name];
    else next[name] = { expiresAt, of: fingerprint(value) };
    if (JSON.stringify(next) === JSON.stringify(this.records)) return;
    this.records = next;
    ensurePrivateDir(join(this.file, ".."));
    writeFileAtomic(this.file, `${JSON.stringify(next, null, 2)}\n`);
  }
}
