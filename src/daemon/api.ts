/**
 * The daemon's HTTP API (Elysia). Every request first passes the guard (api-guard.ts: its own
 * Host; writes in JSON and from its own origin or with the token header). Every /api route
 * requires the daemon token, as a bearer header (the CLI) or the session cookie the dashboard
 * gets from it. This is one of the two places a LazyError becomes words (the CLI's printer is
 * the other).
 */
import { Elysia } from "elysia";
import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { Tasks, STATUSES, isStatus, isFinal, type Status } from "../store";
import { resolveProfile, defaultProfile } from "../config";
import { dashboardPage } from "../dashboard";
import type { Daemon } from "./daemon";
import { requestGuard, cookieValue, SESSION_COOKIE as COOKIE } from "./api-guard";

export const SetCredential = z.strictObject({ value: z.string().describe("The secret; it travels over the loopback API only.") });

export const MintGrant = z.strictObject({
  role: z.enum(["agent", "host", "lazy"]).describe("agent: a task's turns; host: lazy chat/pair; lazy: lazy's own calls"),
  profile: z.string().optional().describe("Agent profile; the [models.roles] agent one when absent."),
  task: z.string().optional().describe("Task reference (agent role): a code or hex id prefix."),
});

export const AddTask = z.strictObject({
  prompt: z.string().describe("What the agent should do."),
  title: z.string().optional(),
  code: z.string().optional().describe("Unique handle such as fix-login."),
  profile: z.string().optional().describe("Agent profile; the [models.roles] agent one when absent."),
});

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw new LazyError("invalid_input", `Bad request: ${r.error.issues.map((i) => `${i.path.join(".") || "body"} ${i.message}`).join("; ")}.`);
  return r.data;
}

export function api(d: Daemon, token: string, log: Logger) {
  const want = Buffer.from(token);
  const authorized = (req: Request): boolean => {
    const h = req.headers.get("authorization");
    const given = h?.startsWith("Bearer ") ? h.slice(7) : cookieValue(req.headers.get("cookie"), COOKIE);
    if (!given) return false;
    const g = Buffer.from(given);
    return g.length === want.length && timingSafeEqual(g, want);
  };

  const guard = requestGuard(() => d.apiUrl);

  return new Elysia()
    .onError(({ error, code, set }) => {
      if (error instanceof LazyError) {
        set.status = error.status;
        return error.toJSON();
      }
      if (code === "NOT_FOUND") {
        set.status = 404;
        return new LazyError("not_found", "No such route on the lazy daemon; is the CLI the same version as the daemon (lazy daemon restart)?").toJSON();
      }
      if (code === "PARSE") {
        set.status = 400;
        return new LazyError("invalid_input", "The request body is not valid JSON.").toJSON();
      }
      log.error(`API error: ${(error as Error)?.stack ?? String(error)}`);
      set.status = 500;
      return new LazyError("internal", "The daemon hit an internal error; see lazy daemon logs.").toJSON();
    })
    .onRequest(({ request, set }) => {
      // Before routing and body parsing: a refused request changes nothing.
      const refused = guard(request);
      if (refused) {
        set.status = refused.status;
        return refused.toJSON();
      }
      const path = new URL(request.url).pathname;
      if (path.startsWith("/api/") && !authorized(request)) {
        set.status = 401;
        return new LazyError("unauthorized", "The daemon token is missing or wrong; use the lazy CLI (it reads the token from the daemon's state folder).").toJSON();
      }
    })
    .get("/", ({ set }) => {
      if (!d.webEnabled) {
        set.status = 404;
        return "The dashboard is off ([server] web = false in lazy.toml).";
      }
      return new Response(dashboardPage(), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    })
    .get("/api/health", () => ({ ok: true, pid: process.pid, version: d.version }))
    .post("/api/session", () =>
      // The dashboard trades the token from its URL fragment for an HttpOnly cookie once.
      new Response(null, { status: 204, headers: { "set-cookie": `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/` } }),
    )
    .get("/api/status", () => d.status())
    .post("/api/daemon/stop", () => {
      setTimeout(() => void d.stop("stop requested"), 10);
      return { stopping: true, pid: process.pid };
    })
    .get("/api/tasks", ({ query }) => {
      const status = query.status as string | undefined;
      if (status !== undefined && !isStatus(status))
        throw new LazyError("invalid_input", `Unknown status "${status}": use one of ${STATUSES.join(", ")}.`);
      return Tasks.list(d.db, { status: status as Status | undefined });
    })
    .post("/api/tasks", ({ body, set }) => {
      const input = parseBody(AddTask, body);
      const config = d.configWatch.state.config;
      const profile = input.profile ?? defaultProfile(config);
      resolveProfile(config, profile);
      const task = Tasks.add(d.db, { ...input, profile });
      d.bus.publish({ kind: "task", taskId: task.id });
      set.status = 201;
      return task;
    })
    .get("/api/tasks/:ref", ({ params }) => {
      const task = Tasks.resolve(d.db, decodeURIComponent(params.ref));
      return { task, events: Tasks.events(d.db, task.id) };
    })
    .get("/api/counts", () => Tasks.counts(d.db))
    .post("/api/tasks/:ref/start", ({ params }) => d.runner.start(decodeURIComponent(params.ref)))
    .post("/api/tasks/:ref/send", ({ params, body }) => {
      const { message } = parseBody(z.strictObject({ message: z.string().min(1) }), body);
      return d.runner.start(decodeURIComponent(params.ref), message);
    })
    .post("/api/tasks/:ref/stop", ({ params }) => d.runner.stop(decodeURIComponent(params.ref)))
    .post("/api/tasks/:ref/accept", ({ params }) => d.runner.accept(decodeURIComponent(params.ref)))
    .post("/api/tasks/:ref/reject", ({ params }) => d.runner.reject(decodeURIComponent(params.ref)))
    .post("/api/tasks/:ref/close", ({ params }) => d.runner.close(decodeURIComponent(params.ref)))
    .get("/api/tasks/:ref/workspace", ({ params }) => d.runner.workspace(decodeURIComponent(params.ref)))
    .get("/api/tasks/:ref/events", ({ params, query }) => {
      const task = Tasks.resolve(d.db, decodeURIComponent(params.ref));
      return { task, events: Tasks.events(d.db, task.id, Number(query.after ?? 0) || 0) };
    })
    .get("/api/auth", async () => ({
      backend: d.credentials.backend,
      note: d.credentials.backendNote,
      credentials: d.credentials.list(),
      problems: (await d.proxy.stats()).problems,
    }))
    .put("/api/auth/:name", async ({ params, body }) => {
      const { value } = parseBody(SetCredential, body);
      const info = await d.credentials.set(params.name, value);
      // The proxy's thread uses the new value from its next request on.
      await d.proxy.clearProblem(params.name);
      log.info(`credential ${params.name} set (${info.kind}, ${d.credentials.backend})`);
      return info;
    })
    .delete("/api/auth/:name", async ({ params }) => {
      const removed = await d.credentials.remove(params.name);
      if (!removed) throw new LazyError("not_found", `No stored credential "${params.name}": see lazy auth list.`);
      await d.proxy.sync();
      log.info(`credential ${params.name} removed`);
      return { removed: params.name };
    })
    .post("/api/proxy/grants", async ({ body }) => {
      const input = parseBody(MintGrant, body);
      if (d.proxy.state !== "ready")
        throw new LazyError("proxy_unavailable", "The model proxy is not available, so nothing can be launched; run lazy doctor for the finding and remedy.");
      const config = d.configWatch.state.config;
      const task = input.task ? Tasks.resolve(d.db, input.task) : undefined;
      if (input.role === "agent" && !task) throw new LazyError("invalid_input", "An agent grant needs a task.");
      if (task && isFinal(task.status)) throw new LazyError("conflict", `Task ${task.code ?? task.id} is ${task.status}; its session has ended.`);
      const launch = await d.proxy.mintFor({
        role: input.role,
        profile: input.profile ?? task?.profile ?? defaultProfile(config),
        taskId: task?.id ?? null,
        taskRef: task ? (task.code ?? task.id) : null,
      });
      const addr = d.proxy.address!;
      return {
        envVar: launch.envVar,
        placeholder: launch.placeholder,
        proxyUrl: `http://${addr.host.includes(":") ? `[${addr.host}]` : addr.host}:${addr.port}`,
        profile: launch.profile,
        credential: launch.target.credential,
      };
    })
    .get("/api/stats/audit", async ({ query }) => {
      const task = query.task !== undefined ? String(query.task) : undefined;
      if (task !== undefined && !task.trim()) throw new LazyError("invalid_input", "An empty task filter names no task; give a code or an id prefix, or leave --task out.");
      const t = task ? Tasks.resolve(d.db, task) : undefined;
      const limit = Math.min(10_000, Math.max(1, Number(query.limit ?? 100) || 100));
      return { rows: await d.proxy.audit.query({ taskId: t?.id, limit }), totals: t ? await d.proxy.audit.totals(t.id) : null, task: t ?? null };
    })
    .get("/api/stats/limits", () => d.proxy.stats())
    .get("/api/events", ({ request }) => {
      // Live updates for the dashboard: the counts now, then again whenever a task changes.
      let unsubscribe = () => {};
      let beat: Timer | undefined;
      const enc = new TextEncoder();
      const stream = new ReadableStream<Uint8Array>({
        start(ctrl) {
          const send = () => ctrl.enqueue(enc.encode(`event: counts\ndata: ${JSON.stringify(Tasks.counts(d.db))}\n\n`));
          send();
          unsubscribe = d.bus.subscribe((c) => {
            if (c.kind === "task") send();
          });
          beat = setInterval(() => ctrl.enqueue(enc.encode(": keep-alive\n\n")), 15_000);
          request.signal.addEventListener("abort", () => {
            unsubscribe();
            clearInterval(beat);
            try {
              ctrl.close();
            } catch {}
          });
        },
        cancel() {
          unsubscribe();
          clearInterval(beat);
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" } });
    });
}
