import { FAILURE_KINDS } from "../../config";
import { type Cost, costText, refusedText } from "../../lines";
// Types only from the proxy: loading its modules would cost every stats command tens of ms.
import type { AuditRefusalTally, AuditRow, LimitView, ProviderHealth } from "../../proxy";
import type { BudgetReport, Pause } from "../../spending";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson, table } from "../command";

const ms = (v: number | null) => (v === null ? "-" : v.toFixed(2));
const audit = command({
  meta: { name: "stats audit", description: "The proxy's audit trail: every model call, refusal and credential failure" },
  args: {
    task: { type: "string", description: "Only this task's calls (a code, matched exactly, or ≥ 4 hex chars of its id)" },
    limit: { type: "string", description: "How many of the latest rows (default 100)" },
    ...jsonArg,
  },
  async run({ args, rawArgs }) {
    const c = await Client.connect(findProjectRoot());
    const q = new URLSearchParams();
    if (rawArgs.some((a) => a === "--task" || a.startsWith("--task="))) q.set("task", args.task ?? "");
    if (args.limit) q.set("limit", args.limit);
    const r = await c.request<{
      rows: (AuditRow & { id: number })[];
      totals: Record<string, number> | null;
      refused: AuditRefusalTally;
    }>("GET", `/api/stats/audit?${q}`);
    if (args.json) return printJson(r);
    if (!r.rows.length) print(r.refused.length ? "No proxied calls recorded but refusals (below)." : "No proxied calls recorded.");
    else
      print(
        table([
          [
            "TIME",
            "TASK",
            "ROLE",
            "PROFILE",
            "CRED",
            "METHOD",
            "PATH",
            "STATUS",
            "MS",
            "TTFB",
            "LAZY in/out",
            "TOKENS in/out/cache",
            "MODEL",
            "NOTE",
          ],
          ...r.rows.map((x) => [
            new Date(x.at).toISOString().slice(11, 23),
            x.taskRef ?? "-",
            x.role ?? "-",
            x.profile ?? "-",
            x.credential ?? "-",
            x.method,
            x.path,
            String(x.status),
            x.durationMs.toFixed(0),
            x.ttfbMs === null ? "-" : x.ttfbMs.toFixed(0),
            // lazy's own added time (ms): arrival → departure upstream, answer's head back → on to the agent.
            x.lazyInMs === null && x.lazyOutMs === null ? "-" : `${ms(x.lazyInMs)}/${ms(x.lazyOutMs)}`,
            x.usage ? `${x.usage.input}/${x.usage.output}/${x.usage.cacheRead + x.usage.cacheWrite}` : "-",
            // The model served (what it is priced by), and the one asked when it differs or none was served.
            modelText(x.modelAsked ?? null, x.modelServed ?? null),
            [x.hop ? `fallback hop ${x.hop} (${x.upstream})` : "", x.retries ? `retried ${x.retries}×` : "", x.note ?? ""]
              .filter(Boolean)
              .join("; ") || "-",
          ]),
        ]),
      );
    if (r.refused.length) {
      print("\nRefused callers lazy cannot attribute (counted per minute, source and reason; never rows):");
      for (const l of r.refused) print(refusedText(l));
    }
    if (r.totals)
      print(
        `\nTask totals (all time): ${r.totals.requests} requests, ${r.totals.input} input, ${r.totals.output} output, ${r.totals.cacheRead} cache read, ${r.totals.cacheWrite} cache write tokens`,
      );
  },
});

const limits = command({
  meta: { name: "stats limits", description: "Usage-limit readings per credential, and provider health over the last hour" },
  args: jsonArg,
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{ limits: LimitView[]; health: ProviderHealth[]; problems: Record<string, string>; paused: Pause[] }>(
      "GET",
      "/api/stats/limits",
    );
    if (args.json) return printJson(r);
    if (!r.limits.length) print("No usage-limit readings yet.");
    for (const l of r.limits) {
      print(`${l.owner}${l.credential ? ` (credential ${l.credential})` : ""} — ${l.upstream}, read ${l.at}`);
      const paused = r.paused.find((p) => p.credential === l.credential);
      if (paused)
        print(`  PAUSED until ${paused.resetsAt}: ${paused.detail} — new turns on ${paused.credential} wait for the reset ([usage_pause])`);
      if (l.quota && !paused) print(`  quota refused ${l.quota.at}: ${l.quota.detail}`);
      const ws = l.windows.filter((w) => w.usedPercent !== null || w.status);
      if (!ws.length) print("  no reading");
      const retry = l.headers["retry-after-ms"] ? `${Number(l.headers["retry-after-ms"]) / 1000}` : l.headers["retry-after"];
      if (retry) print(`  retry after ${retry} s (status ${l.status})`);
      for (const w of ws)
        print(
          `  ${w.name.padEnd(28)} ${w.usedPercent === null ? "   -" : `${Math.round(w.usedPercent).toString().padStart(3)} %`}  ${w.status ?? ""}${w.resetsAt ? `  resets ${w.resetsAt}` : ""}`,
        );
    }
    print("\nProvider health (last hour):");
    if (!r.health.length) print("  no requests");
    for (const h of r.health) {
      const f =
        FAILURE_KINDS.filter((k) => h.failures[k] > 0)
          .map((k) => `${k} ${h.failures[k]}`)
          .join(", ") || "no failures";
      print(`  ${h.provider}: ${h.requests} requests; ${f}${h.latest ? `; latest: ${h.latest.detail} at ${h.latest.at}` : ""}`);
    }
    for (const [name, p] of Object.entries(r.problems)) print(`! ${name}: ${p}`);
  },
});

/** A row's model: the one served, "asked A, served B" when they differ, "asked A" when none was served. */
function modelText(asked: string | null, served: string | null): string {
  // "": the answer named a model lazy does not keep (control bytes, spaces, too long).
  if (served === "") return `${asked ? `asked ${asked}, ` : ""}served an unreadable model name`;
  if (served) return asked && asked !== served ? `asked ${asked}, served ${served}` : served;
  return asked ? `asked ${asked}` : "-";
}

const usd = (v: number | null) => (v === null ? "-" : `$${v.toFixed(2)}`);
/** Spending's dollars, naming any model lazy has no price for. */
const cost = (s: Cost) => costText(s);

const budget = command({
  meta: {
    name: "stats budget",
    description: "Tokens and cost per task, profile, credential and day, against any [budget]; each credential's windows",
  },
  args: { days: { type: "string", description: "How many days back (default 30)" }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<BudgetReport & { limits: LimitView[] }>(
      "GET",
      `/api/stats/budget${args.days ? `?days=${encodeURIComponent(args.days)}` : ""}`,
    );
    if (args.json) return printJson(r);
    const b = r.budget;
    const set = [
      b.per_task_tokens !== undefined && `per task ${b.per_task_tokens} tokens`,
      b.per_task_usd !== undefined && `per task ${usd(b.per_task_usd)}`,
      b.per_day_tokens !== undefined && `per day ${b.per_day_tokens} tokens`,
      b.per_day_usd !== undefined && `per day ${usd(b.per_day_usd)}`,
    ].filter(Boolean);
    print(`Budget: ${set.length ? set.join(", ") : "none set ([budget] in lazy.toml)"}`);
    print(`Today (${r.today.day}, UTC): ${r.today.tokens} tokens in ${r.today.requests} requests, ${cost(r.today)}`);
    print("\nCredentials:");
    if (!r.credentials.length && !r.limits.length) print("  none used yet");
    for (const cr of r.credentials) {
      const reading = r.limits
        .filter((l) => (l.credential ?? "(none)") === cr.credential)
        .flatMap((l) => l.windows.filter((w) => w.usedPercent !== null && /five_hour|seven_day|primary|secondary/.test(w.name)));
      print(
        `  ${cr.credential.padEnd(16)} ${String(cr.tokens).padStart(10)} tokens  ${cost(cr).padStart(9)}  ${reading.length ? reading.map((w) => `${w.name} ${Math.round(w.usedPercent!)} %`).join(", ") : "no reading"}`,
      );
    }
    print("\nTasks (most tokens first):");
    if (!r.tasks.length) print("  none used yet");
    else
      print(
        table([
          ["  TASK", "TOKENS", "COST", "BUDGET"],
          ...r.tasks.map((t) => [
            `  ${t.code ?? t.taskId.slice(0, 8)}`,
            String(t.tokens),
            cost(t),
            [t.limit.tokens !== null ? `${t.limit.tokens} tokens` : "", t.limit.usd !== null ? usd(t.limit.usd) : ""]
              .filter(Boolean)
              .join(", ") || "-",
          ]),
        ]),
      );
    print("\nProfiles:");
    for (const p of r.profiles) print(`  ${p.profile.padEnd(16)} ${String(p.tokens).padStart(10)} tokens  ${cost(p)}`);
    // Priced by the model each request was served (else asked), never by a profile's config.
    print("\nModels (as served):");
    for (const m of r.models)
      print(
        `  ${(m.model || "(none named)").padEnd(24)} ${String(m.tokens).padStart(10)} tokens  ${m.priced ? usd(m.usd) : `tokens only (${m.model ? `no price known for ${m.model}` : "no answer named a model lazy could read"})`}`,
      );
    print("\nDays:");
    for (const d of r.days) print(`  ${d.day}  ${String(d.tokens).padStart(10)} tokens  ${cost(d)}`);
  },
});

export const stats = command({
  meta: { name: "stats", description: "What the proxy saw: audit, limits, budget and provider health" },
  subCommands: { audit, limits, budget },
});
