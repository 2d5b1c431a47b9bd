/**
 * Home's banner for OAuth tokens that lapse within a day or have lapsed (the daemon's
 * credentials/expiry-warnings.ts, read from /api/auth): one line each, with the command that
 * replaces the token. Kept apart from home.ts so the page's own code stays its own.
 */
import type * as Answers from "../answers";
import { api, fill, h } from "./dom";

type Notice = Answers.Auth["expiry"][number];

export async function expiryBanner(): Promise<void> {
  const el = document.getElementById("expiry");
  if (!el) return;
  const { expiry } = await api<Answers.Auth>("GET", "/api/auth").catch(() => ({ expiry: [] as Notice[] }));
  el.hidden = !expiry?.length;
  fill(el, ...(expiry ?? []).map((n) => h("p", { class: n.expired ? "error" : "warn", "data-credential": n.credential }, n.message)));
}
