/**
 * Where a placeholder may be presented from: a task's placeholder is pinned to its container's
 * address (and to lazy's own call containers sharing it while they run); a host or builder
 * session's to this machine. The request path and the Cursor route refuse it from anywhere else.
 */
import type { Server } from "bun";
import type { Grant } from "./grants";

export const isLoopback = (address: string) => address.startsWith("127.") || address === "::1";

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
