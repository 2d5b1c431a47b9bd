/**
 * The request path's first stage, who is calling: the credential it presents (headers.ts), where
 * it came from, and whether it may go on (the pin itself is identity/pin.ts). The request path
 * (forward.ts) and the Cursor route decide with these.
 */
import type { Server } from "bun";
import { type Grant, isLoopback, liveKey, offPin, Placeholders, pinnedTo, pinOwner } from "../identity";
import { NOTE } from "../meters";
import type { Call } from "./call";
import type { Context } from "./context";
import { type Refusal, refusal } from "./errors";
import { presentedBearer } from "./headers";

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
): { refusal: Refusal; note: string } | undefined {
  if (token && !grant && Placeholders.isPlaceholder(token)) return { refusal: { code: "placeholder_unknown" }, note: NOTE.grantGone };
  if (token && !grant) {
    const from = (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");
    // Two headers of one name arrive joined by ", ".
    const placeholderBeside = [req.headers.get("x-api-key"), presentedBearer(req.headers)]
      .flatMap((v) => (v ? v.split(",") : []))
      .some((v) => Placeholders.isPlaceholder(v.trim()));
    if (placeholderBeside) return { refusal: { code: "placeholder_beside_credential" }, note: "placeholder beside another credential" };
    if (!isLoopback(from)) return { refusal: { code: "own_credential_remote", from }, note: `own credential from ${from}` };
    return undefined;
  }
  if (!grant) return undefined;
  return grantRefusal(req, server, grant, live);
}

/**
 * Why a grant may not redeem here, whichever route it was presented on (the request path, the
 * Cursor route): a brokered service's placeholder, one whose task has no running turn, or one
 * presented from an address it is not pinned to. Undefined: it may go on.
 */
export function grantRefusal(
  req: Request,
  server: Server<undefined>,
  grant: Grant,
  live: (key: string) => boolean,
): { refusal: Refusal; note: string } | undefined {
  // A brokered service's placeholder redeems only at its service, through the egress proxy.
  if (Placeholders.SERVICE_SHAPES.includes(grant.shape))
    return {
      refusal: { code: "service_placeholder", task: grant.taskRef ?? grant.taskId, service: grant.profile.replace(/^service:/, "") },
      note: "a brokered service's placeholder",
    };
  const key = liveKey(grant);
  if (key && !live(key)) return { refusal: { code: "placeholder_not_live", task: grant.taskRef ?? grant.taskId }, note: "no running turn" };
  const from = offPin(grant, req, server);
  if (from)
    return {
      refusal: { code: "placeholder_off_pin", owner: pinOwner(grant), from },
      note: NOTE.pinned(from, pinnedTo(grant)?.join(",") || "none"),
    };
  return undefined;
}

/**
 * Stage 1: a refusal for a caller that may not go on, or undefined. Every refusal here is of a
 * caller whose credential redeems no grant lazy can vouch for: counted per minute, source and
 * reason, not a row (audit/refusals.ts), with its rate-limited log line.
 */
export function checkCaller(ctx: Context, call: Call): Response | undefined {
  // No credential at all: only the surface's reachability probes (HEAD; Claude Code's
  // `HEAD /api/hello` comes before it authenticates) go on; anything else needs a placeholder.
  if (!call.token && call.req.method !== "HEAD")
    return call.refuseUnknown(refusal("anthropic", { code: "no_credential" }), "no credential");
  // Whose placeholder, from where, while which turn runs: one refusal per reason.
  const denied = callerRefusal(call.req, call.server, call.token, call.grant, ctx.live);
  if (denied) return call.refuseUnknown(refusal("anthropic", denied.refusal), denied.note);
  return undefined;
}
