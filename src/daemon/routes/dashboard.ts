/**
 * The dashboard's routes: its page (when [server] web is on), and the sign-in that trades the
 * token from the page's URL fragment for an HttpOnly session cookie, once.
 */
import { Elysia } from "elysia";
import { dashboardPage } from "../../dashboard";
import { SESSION_COOKIE } from "../api-guard";

export interface DashboardDeps {
  /** [server] web in the config in force now. */
  webEnabled: () => boolean;
}

export function dashboardRoutes(d: DashboardDeps, token: string) {
  return new Elysia()
    .get("/", ({ set }) => {
      if (!d.webEnabled()) {
        set.status = 404;
        return "The dashboard is off ([server] web = false in lazy.toml).";
      }
      return new Response(dashboardPage(), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    })
    .post("/api/session", ({ cookie, set }) => {
      // Only a request with the token gets here (the API's check runs first): the cookie is that token.
      cookie[SESSION_COOKIE]!.set({ value: token, httpOnly: true, sameSite: "strict", path: "/" });
      set.status = 204;
    });
}
