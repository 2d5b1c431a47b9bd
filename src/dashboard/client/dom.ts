/**
 * The client's small tools: building elements (text only, never HTML: everything shown may
 * come from an agent), calling the daemon's API with the session cookie (its error text shown
 * as the CLI shows it), and formatting numbers, ages and countdowns.
 */
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === "class") el.className = String(v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** A table that scrolls on its own: `head`'s cells in one header row, then `rows` (each a `tr`); `attrs` on the table. */
export function table(head: Child[], rows: Child[], attrs: Record<string, string> = {}): HTMLDivElement {
  return h("div", { class: "scroll" }, h("table", attrs, h("thead", {}, h("tr", {}, ...head)), h("tbody", {}, ...rows)));
}

export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

export function fill(el: HTMLElement, ...children: Child[]): void {
  el.replaceChildren(...(children.filter((c) => c !== null && c !== undefined && c !== false) as (Node | string)[]));
  el.classList.remove("muted");
}

/** An error the daemon answered: its message is the one the CLI prints. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: body === undefined && method === "GET" ? {} : { "content-type": "application/json" },
    body: method === "GET" ? undefined : JSON.stringify(body ?? {}),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {}
  if (!res.ok) {
    const e = (json as { error?: { message?: string; details?: string[] } } | null)?.error;
    throw new ApiError(res.status, e?.message ? [e.message, ...(e.details ?? [])].join("\n") : `The daemon answered ${res.status}.`);
  }
  return json as T;
}

export function showError(e: unknown): void {
  const el = document.getElementById("error");
  if (!el) return;
  el.hidden = !e;
  el.textContent = e ? (e instanceof Error ? e.message : String(e)) : "";
}

export const num = (n: number) => n.toLocaleString("en-US");
/** A dollar amount that is set (a budget's limit); what was spent is lines/ costText, which names a model with no price. */
export const usd = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`;

/** How long ago `iso` was ("2m ago"), or how soon it comes ("in 2m"). */
export function ago(iso: string, now = Date.now()): string {
  const d = Math.round((now - Date.parse(iso)) / 1000);
  const s = Math.abs(d);
  const n = s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m` : s < 86400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86400)}d`;
  return d < -1 ? `in ${n}` : `${n} ago`;
}

/** The exact local time of `iso`, as a title shows it: `2026-12-06 19:56:08 (UTC+01:00)`. */
export function exact(iso: string): string {
  const t = new Date(iso);
  const off = -t.getTimezoneOffset();
  const p = (n: number) => String(Math.floor(Math.abs(n))).padStart(2, "0");
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())} (UTC${off < 0 ? "-" : "+"}${p(off / 60)}:${p(off % 60)})`;
}

/** A time as people read it on a page: relative, the exact time in its title. */
export const when = (iso: string, prefix = ""): HTMLTimeElement => h("time", { datetime: iso, title: exact(iso) }, `${prefix}${ago(iso)}`);

const ISO = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)/g;

/**
 * `text` with every ISO time in it shown as `when` shows one (a daemon's sentence names times in
 * ISO): "starts by itself at 2026-…" reads "starts by itself in 5m", "since 2026-…" "started 2m ago".
 */
export function withTimes(text: string): (string | Node)[] {
  const out: (string | Node)[] = [];
  let at = 0;
  for (const m of text.matchAll(ISO)) {
    if (Number.isNaN(Date.parse(m[0]))) continue;
    const before = text.slice(at, m.index);
    out.push(
      ...(/\bsince $/.test(before) ? [before.replace(/since $/, ""), when(m[0], "started ")] : [before.replace(/\bat $/, ""), when(m[0])]),
    );
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return out.filter((x) => x !== "");
}

export function countdown(iso: string, now = Date.now()): string {
  let s = Math.max(0, Math.round((Date.parse(iso) - now) / 1000));
  if (!s) return "now";
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = s % 60;
  return `${d ? `${d}d ` : ""}${hh}h ${String(mm).padStart(2, "0")}m ${String(ss).padStart(2, "0")}s`;
}

/** Run `fn` once after calls stop coming for `ms` (a burst of live changes → one reload). */
export function debounce(fn: () => void, ms: number): () => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(t);
    t = setTimeout(fn, ms);
  };
}

export const badge = (status: string) => h("span", { class: `badge s-${status}` }, status);
