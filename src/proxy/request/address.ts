/**
 * How a request is addressed to a target, shared by the request path (forward.ts) and a
 * fallback's hop (fallback.ts): the upstream URL, and the anthropic-beta list an OAuth token
 * needs beside it.
 */
import type { Target } from "../identity";

/** The upstream URL: the endpoint (with any path prefix) and the checked path, concatenated. */
export function joinUrl(t: Pick<Target, "base">, path: string): string {
  // An OpenAI-style endpoint usually ends in /v1 (like OPENAI_BASE_URL); don't double it.
  if (t.base.endsWith("/v1") && path.startsWith("/v1/")) return t.base + path.slice(3);
  if (t.base.endsWith("/v1") && path === "/v1") return t.base;
  return t.base + (path === "/" && new URL(t.base).pathname !== "/" ? "" : path);
}

export function withBeta(current: string | null, beta: string): string {
  const list = (current ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return list.includes(beta) ? list.join(",") : [...list, beta].join(",");
}

export const OAUTH_BETA = "oauth-2025-04-20";

/** The upstream's host, as errors name it. */
export const hostOf = (t: Pick<Target, "origin">) => new URL(t.origin).host;
