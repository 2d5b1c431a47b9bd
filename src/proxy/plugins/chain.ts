/**
 * The loaded plugins of one proxy thread, run in order on each request. Each thread imports the
 * modules itself (a function cannot be posted between threads). A plugin that failed to load,
 * throws, answers something that is not a result, or passes its time limit fails the request
 * with lazy's own error naming it: a plugin that stands guard must never be silently skipped.
 */
import type { PluginFunction, PluginRequest, Spec } from "./types";

type Loaded = { name: string; timeoutMs: number; fn: PluginFunction } | { name: string; timeoutMs: number; refused: string };

/** What the plugins made of a request. */
export type Outcome =
  | { kind: "pass"; note: string | null; path?: string; headers?: Record<string, string>; body?: string }
  | { kind: "refuse"; plugin: string; reason: string; note: string | null }
  | { kind: "fail"; plugin: string; error: string; note: string | null };

const MAX_NOTE = 500;
/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_REASON = 500;

/** Import each spec's module and take its default export; what fails is kept with its reason. */
export async function load(specs: readonly Spec[]): Promise<Loaded[]> {
  return Promise.all(
    specs.map(async (s): Promise<Loaded> => {
      if ("refused" in s) return { name: s.name, timeoutMs: s.timeoutMs, refused: s.refused };
      try {
        const mod = (await import(s.file)) as { default?: unknown };
        if (typeof mod.default !== "function")
          return { name: s.name, timeoutMs: s.timeoutMs, refused: `${s.file} has no default export function` };
        return { name: s.name, timeoutMs: s.timeoutMs, fn: mod.default as PluginFunction };
      } catch (e) {
        return { name: s.name, timeoutMs: s.timeoutMs, refused: `${s.file} failed to load: ${oneLine(e)}` };
      }
    }),
  );
}

/** How each plugin loaded, for lazy doctor: null when it loaded. */
export const problems = (loaded: readonly Loaded[]) => loaded.map((l) => ({ name: l.name, refused: "refused" in l ? l.refused : null }));

export class Chain {
  private loaded: Loaded[] | null = null;
  private readonly ready: Promise<void>;

  constructor(specs: readonly Spec[]) {
    this.ready = load(specs).then((l) => {
      this.loaded = l;
    });
  }

  /** Run every plugin in order; each sees the request as the one before left it. */
  async run(req: PluginRequest): Promise<Outcome> {
    if (!this.loaded) await this.ready;
    let note: string | null = null;
    const out: Outcome & { kind: "pass" } = { kind: "pass", note: null };
    // One object for every plugin in turn (they are the user's own code, not each other's
    // adversaries); a rewrite replaces its fields for the next.
    const current = req;
    for (const p of this.loaded!) {
      if ("refused" in p) return { kind: "fail", plugin: p.name, error: `it is not loaded: ${p.refused}`, note };
      let r: unknown;
      try {
        r = await within(p.fn(current), p.timeoutMs);
      } catch (e) {
        return { kind: "fail", plugin: p.name, error: oneLine(e), note };
      }
      if (r === undefined || r === null) continue;
      if (typeof r !== "object") return { kind: "fail", plugin: p.name, error: `it returned ${typeof r}, not a result object`, note };
      const o = r as Record<string, unknown>;
      if (o.note !== undefined) {
        if (typeof o.note !== "string") return { kind: "fail", plugin: p.name, error: "its note is not a string", note };
        note = [note, `${p.name}: ${clip(o.note, MAX_NOTE)}`].filter(Boolean).join("; ");
      }
      if (o.refuse !== undefined) {
        if (typeof o.refuse !== "string" || !o.refuse)
          return { kind: "fail", plugin: p.name, error: "its refuse is not a non-empty string", note };
        return { kind: "refuse", plugin: p.name, reason: clip(o.refuse, MAX_REASON), note };
      }
      if (o.path !== undefined) {
        if (typeof o.path !== "string") return { kind: "fail", plugin: p.name, error: "its path is not a string", note };
        current.path = out.path = o.path;
      }
      if (o.headers !== undefined) {
        const h = o.headers;
        if (!h || typeof h !== "object" || Object.values(h).some((v) => typeof v !== "string"))
          return { kind: "fail", plugin: p.name, error: "its headers are not an object of strings", note };
        const lower: Record<string, string> = {};
        for (const [k, v] of Object.entries(h as Record<string, string>)) {
          if (!TOKEN.test(k) || /[\r\n\0]/.test(v))
            return { kind: "fail", plugin: p.name, error: `its header ${clip(k, 60)} is not a valid header`, note };
          lower[k.toLowerCase()] = v;
        }
        current.headers = out.headers = lower;
      }
      if (o.body !== undefined) {
        if (typeof o.body !== "string") return { kind: "fail", plugin: p.name, error: "its body is not a string", note };
        Object.defineProperty(current, "body", { value: o.body, enumerable: true, writable: true });
        out.body = o.body;
      }
    }
    out.note = note;
    return out;
  }
}

/** A plugin's answer, or a rejection once its time is up (a synchronous loop cannot be cut). */
function within<T>(value: T | Promise<T>, ms: number): Promise<T> | T {
  if (!(value instanceof Promise) && !(value && typeof (value as { then?: unknown }).then === "function")) return value as T;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`it took longer than its ${ms} ms`)), ms);
    (value as Promise<T>).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

const clip = (s: string, max: number) => {
  // Control bytes would reach audit rows, logs and terminals.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control bytes is the point
  const flat = s.replace(/[\x00-\x1f\x7f-\x9f]/g, " ");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

function oneLine(e: unknown): string {
  const m = e instanceof Error ? `${e.name === "Error" ? "" : `${e.name}: `}${e.message}` : String(e);
  return clip(m.split("\n")[0] ?? "", MAX_REASON);
}
