/**
 * The request path's second stage, where it goes: the grant's profile decides the target;
 * traffic with no grant goes to the primary. A profile gone from lazy.toml, a Cursor profile's
 * placeholder off the Cursor route, a plain-http target the host's proxy would carry
 * (upstream/way.ts), and a task stopped at its budget end the request here.
 */
import type { Target, Targets } from "../identity";
import { wayTo } from "../upstream";
import type { Call } from "./call";
import type { Context } from "./context";
import { refusal } from "./errors";

/** Stage 2: the target the request goes to, or the refusal (its row and log line written). */
export function route(ctx: Context, call: Call, targets: Targets): Target | Response {
  const grant = call.grant;
  const upstream: Target | undefined = grant ? targets.forProfile(grant.profile) : targets.primary();
  if (!upstream)
    return call.refuse(refusal("anthropic", { code: "profile_gone", profile: grant!.profile }), `profile ${grant!.profile} gone`, "");
  call.base.upstream = upstream.origin;

  // A plain-http upstream behind the host's proxy: the proxy would read it all (one Map lookup).
  const way = wayTo(upstream.origin);
  if (way.via === "refused")
    return call.refuse(
      refusal(upstream.wire === "openai" ? "openai" : "anthropic", {
        code: "plain_through_proxy",
        to: upstream.provider,
        host: way.host,
        proxy: way.proxy,
      }),
      `refused: plain http:// through the host's proxy ${way.proxy}`,
      upstream.origin,
    );

  // A cursor-agent profile's placeholder redeems the Cursor key on the Cursor route only, where
  // the answer is scrubbed of it (cursor.ts); here it would go to Cursor's API unscrubbed.
  if (grant && upstream.kind === "cursor")
    return call.refuse(
      refusal("anthropic", { code: "cursor_placeholder_off_route", method: call.req.method, path: call.base.path, profile: grant.profile }),
      `placeholder of Cursor profile ${grant.profile} on the ordinary route`,
      upstream.origin,
    );

  // A task that reached its budget: its turn stops here, and the agent is told why.
  const stop = grant?.taskId ? ctx.stopped(grant.taskId) : undefined;
  if (stop)
    return call.refuse(
      refusal(upstream.wire === "openai" ? "openai" : "anthropic", { code: "budget_stop", why: stop }),
      `budget: ${stop}`,
      upstream.origin,
    );
  return upstream;
}
