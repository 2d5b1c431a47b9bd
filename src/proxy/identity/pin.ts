/**
 * Where a secret lazy gave out may be presented from — one rule for placeholders and MCP tokens
 * alike: a task's is pinned to its container's address (a placeholder also to lazy's own call
 * containers sharing it while they run), and once that container stops, to no address until
 * the next turn pins it again; a host or builder session's placeholder to this machine. The
 * request path, the Cursor route and the MCP route refuse it from anywhere else.
 */
import type { Server } from "bun";
import { z } from "zod";

/** The pin's fields, in a grant and in an MCP token alike. */
export const Pin = z.object({
  pinnedIp: z
    .string()
    .nullable()
    .optional()
    .describe("the container address this secret is accepted from, where Docker lets lazy tell (null: none yet, or none since it stopped)"),
  callIps: z
    .array(z.string())
    .optional()
    .describe(
      "addresses of lazy's own call containers that share this placeholder while they run; once set (even empty) the secret is pinned",
    ),
});
export type Pin = z.infer<typeof Pin>;

export const isLoopback = (address: string) => address.startsWith("127.") || address === "::1";

/**
 * The addresses a pinned secret is accepted from (its task's container, and lazy's own call
 * containers sharing it while they run); null when it is not pinned and works from anywhere.
 */
export function pinnedTo(p: Pin): string[] | null {
  if (!p.pinnedIp && !p.callIps) return null;
  return [...new Set([...(p.pinnedIp ? [p.pinnedIp] : []), ...(p.callIps ?? [])])];
}

/** Whether a pinned secret presented from `from` is refused (an unpinned one never is). */
export function offPinFrom(p: Pin, from: string): boolean {
  return (!!p.pinnedIp || !!p.callIps) && from !== p.pinnedIp && !p.callIps?.includes(from);
}

/**
 * Whether a secret presented from `from` is refused: a pinned one off its addresses; one of a
 * session on this machine (lazy chat, pair, build: `onHost`), pinned to no container and so to
 * this machine, from anywhere but loopback, like a stolen one.
 */
export function refusedFrom(p: Pin, onHost: boolean, from: string): boolean {
  if (!p.pinnedIp && !p.callIps) return onHost && !isLoopback(from);
  return offPinFrom(p, from);
}

/** Where a pinned placeholder was presented from, when that is not one of its containers' addresses; undefined when it may be used. */
export function offPin(grant: Pin & { role: string }, req: Request, server: Server<undefined>): string | undefined {
  const onHost = ON_HOST.has(grant.role);
  if (!grant.pinnedIp && !grant.callIps && !onHost) return undefined;
  const from = (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");
  return refusedFrom(grant, onHost, from) ? from : undefined;
}

/** Roles whose grants are used on this machine only: a host session's and a builder session's. */
const ON_HOST = new Set(["host", "builder"]);

/** Whose the containers a pinned placeholder belongs to are, for the refusal's message. */
export function pinOwner(grant: Pin & { role: string; taskRef: string | null; taskId: string | null }): string {
  if (ON_HOST.has(grant.role) && !pinnedTo(grant)) return `a ${grant.role} session on this machine, usable from this machine only,`;
  const who = grant.taskRef ?? grant.taskId;
  const where = pinnedTo(grant)?.join(", ") || "none running now";
  return grant.role === "lazy" ? `lazy's own calls (${where})` : `${who ? `task ${who}'s` : "a"} container (${where})`;
}
