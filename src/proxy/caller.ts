/**
 * Who is calling the proxy, as far as the request itself shows it: the credential it presents
 * (x-api-key, else a bearer token), where it came from, and whether that is where its
 * placeholder is pinned. The request path (forward.ts) and the Cursor route decide with these.
 */
import type { Server } from "bun";
import { liveKey, notLive, type Grant } from "./grants";
import * as Placeholders from "./placeholders";
import { NOTE } from "./meters";

export const isLoopback = (address: string) => address.startsWith("127.") || address === "::1";

/** The bearer token of an Authorization header, if any. */
export function presentedBearer(headers: Headers): string | undefined {
  const auth = headers.get("authorization");
  return auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, "").trim() : undefined;
}

/** What the client presented as its credential, if anything. */
export function presented(headers: Headers): string | undefined {
  const key = headers.get("x-api-key");
  if (key) return key.trim();
  return presentedBearer(headers);
}

/**
 * The addresses a pinned placeholder is accepted from (its task's container, and lazy's own call
 * containers sharing it while they run); null when it is not pinned and works from anywhere.
 */
export function pinnedTo(g: Pick<Grant, "pinnedIp" | "callIps">): string[] | null {
  if (!g.pinnedIp && !g.callIps) return null;
  return [...new Set([...(g.pinnedIp ? [g.pinnedIp] : []), ...(g.callIps ?? [])])];
}

/** Where a pinned placeholder was presented from, when that is not one of its containers' addresses; undefined when it may be used. */
export function offPin(grant: Grant, req: Request, server: Server<undefined>): string | undefined {
  if (!grant.pinnedIp && !grant.callIps) {
    // A session on this machine (lazy chat, pair, build) is pinned to no container, and so to
    // this machine: its placeholder from a container's address is refused like a stolen one.
    if (!ON_HOST.has(grant.role)) return undefined;
    const from = (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");
    return isLoopback(from) ? undefined : from;
  }
  const from = (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");
  return from === grant.pinnedIp || grant.callIps?.includes(from) ? undefined : from;
}

/** Roles whose grants are used on this machine only: a host session's and a builder session's. */
const ON_HOST = new Set(["host", "builder"]);

/** Whose the containers a pinned placeholder belongs to are, for the refusal's message. */
export function pinOwner(grant: Grant): string {
  if (ON_HOST.has(grant.role) && !pinnedTo(grant)) return `a ${grant.role} session on this machine, usable from this machine only,`;
  const who = grant.taskRef ?? grant.taskId;
  const where = pinnedTo(grant)?.join(", ") || "none running now";
  return grant.role === "lazy" ? `lazy's own calls (${where})` : `${who ? `task ${who}'s` : "a"} container (${where})`;
}

/**
 * Why the request path refuses this caller before anything else, or undefined when it may go on:
 * a dead placeholder (lazy cannot vouch for who sent it, so the row names no role or task); a
 * credential of the caller's own from anywhere but this machine, or with a placeholder riding
 * beside it (a container holds no credential but its placeholder); a placeholder whose task has
 * no running turn, or presented from an address it is not pinned to.
 */
export function callerRefusal(
  req: Request,
  server: Server<undefined>,
  token: string | undefined,
  grant: Grant | undefined,
  live: (key: string) => boolean,
): { message: string; note: string } | undefined {
  if (token && !grant && Placeholders.isPlaceholder(token))
    return {
      message:
        "lazy's proxy does not know this placeholder: the task's grant is gone (the task ended, or was never started by this daemon). Start the task again: lazy start TASK.",
      note: "unknown or revoked placeholder",
    };
  if (token && !grant) {
    const from = (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");
    // Two headers of one name arrive joined by ", ".
    const placeholderBeside = [req.headers.get("x-api-key"), presentedBearer(req.headers)]
      .flatMap((v) => (v ? v.split(",") : []))
      .some((v) => Placeholders.isPlaceholder(v.trim()));
    if (placeholderBeside)
      return {
        message:
          "lazy's proxy refused a request carrying a placeholder beside another credential: send the placeholder lazy gave the task, alone.",
        note: "placeholder beside another credential",
      };
    if (!isLoopback(from))
      return {
        message: `lazy's proxy refused a credential that is not lazy's placeholder, presented from ${from}: only a session on this machine may bring its own; a task's agent sends the placeholder lazy gave it.`,
        note: `own credential from ${from}`,
      };
    return undefined;
  }
  if (!grant) return undefined;
  const key = liveKey(grant);
  if (key && !live(key)) return { message: `lazy's proxy refused this placeholder: ${notLive(grant)}`, note: "no running turn" };
  const from = offPin(grant, req, server);
  if (from)
    return {
      message: `lazy's proxy refused this placeholder: it belongs to ${pinOwner(grant)} and was presented from ${from}.`,
      note: NOTE.pinned(from, pinnedTo(grant)?.join(",") || "none"),
    };
  return undefined;
}
