/**
 * The request path's second stage, where it goes: the grant's profile decides the target;
 * traffic with no grant goes to the primary. A profile gone from lazy.toml, a Cursor profile's
 * placeholder off the Cursor route, a plain-http target the host's proxy would carry
 * (upstream/way.ts), and a task stopped at its budget end the request here.
 */
import type { Target, Targets } from "../identity";
import { wayRefusal, wayTo } from "../upstream";
import type { Call } from "./call";
import type { Context } from "./context";
import { errorResponse, plainThroughProxy } from "./errors";

/** Stage 2: the target the request goes to, or the refusal (its row and log line written). */
export function route(ctx: Context, call: Call, targets: Targets): Target | Response {
  const grant = call.grant;
  const upstream: Target | undefined = grant ? targets.forProfile(grant.profile) : targets.primary();
  if (!upstream)
    return call.refuse(
      errorResponse(
        "anthropic",
        401,
        "authentication_error",
        `lazy's proxy refused the request: profile ${grant!.profile} is no longer in lazy.toml, so its placeholder leads nowhere. Start the task again with an existing profile.`,
      ),
      `profile ${grant!.profile} gone`,
      "",
    );
  call.base.upstream = upstream.origin;

  // A plain-http upstream behind the host's proxy: the proxy would read it all (one Map lookup).
  const way = wayTo(upstream.origin);
  if (way.via === "refused")
    return call.refuse(
      plainThroughProxy(upstream.wire === "openai" ? "openai" : "anthropic", wayRefusal(way, upstream.provider)),
      `refused: plain http:// through the host's proxy ${way.proxy}`,
      upstream.origin,
    );

  // A cursor-agent profile's placeholder redeems the Cursor key on the Cursor route only, where
  // the answer is scrubbed of it (cursor.ts); here it would go to Cursor's API unscrubbed.
  if (grant && upstream.kind === "cursor")
    return call.refuse(
      Response.json(
        {
          type: "error",
          error: {
            type: "permission_error",
            message: `lazy's proxy refused this placeholder on ${call.req.method} ${call.base.path}: it belongs to profile ${grant.profile}, a cursor-agent profile, whose placeholder works only under /_lazy/cursor/<placeholder>/.`,
          },
        },
        { status: 403, headers: { "x-should-retry": "false" } },
      ),
      `placeholder of Cursor profile ${grant.profile} on the ordinary route`,
      upstream.origin,
    );

  // A task that reached its budget: its turn stops here, and the agent is told why.
  const stop = grant?.taskId ? ctx.stopped(grant.taskId) : undefined;
  if (stop)
    return call.refuse(
      errorResponse(
        upstream.wire === "openai" ? "openai" : "anthropic",
        403,
        "permission_error",
        `lazy's proxy stopped this turn: ${stop}.`,
      ),
      `budget: ${stop}`,
      upstream.origin,
    );
  return upstream;
}
