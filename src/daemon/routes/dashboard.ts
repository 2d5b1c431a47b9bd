/**
 * The dashboard's routes: its pages and assets (when [server] web is on), and the sign-in that
 * trades the token from the page's URL fragment for an HttpOnly session cookie, once. Pages
 * get a Content-Security-Policy that allows this origin only and no inline script.
 */
import { Elysia } from "elysia";
import { asset, CSP, page, pageFor } from "../../dashboard";

export interface DashboardDeps {
  /** [server] web in the config in force now. */
  webEnabled: () => boolean;
}

/** The dashboard's session cookie: set here at sign-in, read by the API's guard (api-guard.ts) as the token. */
export const SESSION_COOKIE = "lazy_session";

const OFF = "The dashboard is off ([server] web = false in lazy.toml).";
const SECURITY = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "content-security-policy": CSP };

export function dashboardRoutes(d: DashboardDeps, token: string) {
  const serve = (path: string): Response | undefined => {
    if (path.startsWith("/api/")) return undefined;
    if (!d.webEnabled()) return new Response(OFF, { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
    const a = asset(path);
    if (a)
      return new Response(a.body, {
        headers: {
          ...SECURITY,
          "content-type": a.type,
          "cache-control": a.immutable ? "public, max-age=31536000, immutable" : "public, max-age=86400",
        },
      });
    const name = pageFor(path);
    if (name)
      return new Response(page(name), {
        headers: { ...SECURITY, "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
      });
    return new Response("No such page on the lazy dashboard.", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
  };
  return new Elysia()
    .get("/", ({ request }) => serve(new URL(request.url).pathname))
    .get("/tasks", ({ request }) => serve(new URL(request.url).pathname))
    .get("/tasks/:ref", ({ request }) => serve(new URL(request.url).pathname))
    .get("/groups/:code", ({ request }) => serve(new URL(request.url).pathname))
    .get("/watch", ({ request }) => serve(new URL(request.url).pathname))
    .get("/usage", ({ request }) => serve(new URL(request.url).pathname))
    .get("/favicon.svg", ({ request }) => serve(new URL(request.url).pathname))
    .get("/favicon.ico", ({ request }) => serve(new URL(request.url).pathname))
    .get("/assets/:name", ({ request }) => serve(new URL(request.url).pathname))
    .post("/api/session", ({ cookie, set }) => {
      // Only a request with the token gets here (the API's check runs first): the cookie is that token.
      cookie[SESSION_COOKIE]!.set({ value: token, httpOnly: true, sameSite: "strict", path: "/" });
      set.status = 204;
    });
}
