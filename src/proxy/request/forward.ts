/**
 * The request path, stage by stage: who is calling (caller.ts: the grant its placeholder
 * resolves to), where it goes (route.ts), what it may ask for (the forwarding surface,
 * surface.ts), with which credential (credential.ts), the body (body.ts), the request plugins
 * (plugins.ts), the model it asks for and a profile's pin (model.ts), send, with its fallbacks (send.ts), and the answer, recorded off the hot path
 * (answer.ts). Each stage either hands the next what it needs or ends the request with lazy's
 * own answer, its row written (call.ts).
 */
import type { Server } from "bun";
import { type Pass, readBody } from "../listen";
import { answer } from "./answer";
import { body } from "./body";
import { Call } from "./call";
import { checkCaller } from "./caller";
import type { Context } from "./context";
import { credential } from "./credential";
import { pathRefusal, refusal } from "./errors";
import { DROPPED, headerLines } from "./headers";
import { checkModel } from "./model";
import { applyPlugins } from "./plugins";
import { route } from "./route";
import { sendOut } from "./send";
import * as Surface from "./surface";

/**
 * `pass` is the request's admission (gate.ts): released when the answer is done, by the
 * caller for a whole answer, by answer.ts (`held`) for a relayed stream.
 */
export async function handle(ctx: Context, req: Request, server: Server<undefined>, pass: Pass): Promise<Response> {
  // 1. Who is calling.
  const call = new Call(ctx, req, server, pass);
  const denied = checkCaller(ctx, call);
  if (denied) return denied;

  // 2. Where it goes.
  const targets = ctx.targets();
  const upstream = route(ctx, call, targets);
  if (upstream instanceof Response) return upstream;
  const wire: Surface.Wire = upstream.wire === "openai" ? "openai" : "anthropic";

  // 3. What it may ask for: the forwarding surface, in source.
  const kind = upstream.kind === "cursor" ? "anthropic-primary" : upstream.kind;
  const verdict = Surface.check(kind, req.method, call.target, req.headers);
  if (!verdict.ok) return call.refuse(refusal(wire, pathRefusal(verdict)), `refused: ${verdict.reason}`, upstream.origin);

  // 4. With which credential.
  const cred = credential(ctx, call, upstream, wire);
  if (cred instanceof Response) return cred;
  let lines = headerLines(req.headers, call.grant !== undefined, cred.set);

  // 5. The body, whole and within the bound; nothing has gone upstream yet.
  call.unread = false;
  const read = body(call, await readBody(req, pass), upstream, wire);
  if (read instanceof Response) return read;
  let [bytes, path, query, headers] = [read, verdict.path, verdict.query, req.headers];

  // 6. Request plugins see it now, before the credential goes in; a rewrite meets the surface again.
  const plugins = ctx.plugins?.();
  if (plugins) {
    const out = await applyPlugins(plugins, {
      req,
      kind,
      wire,
      path,
      query,
      body: bytes,
      dropped: DROPPED,
      task: call.base.taskRef,
      profile: call.base.profile,
      upstream: upstream.origin,
      asked: call.base.path,
    });
    call.pluginNote = out.note;
    if (!out.ok) return call.refuse(out.response, out.why, upstream.origin);
    [path, query, bytes] = [out.path, out.query, out.body];
    if (out.headers) [headers, lines] = [out.headers, headerLines(out.headers, true, cred.set)];
  }

  // 6b. The model it asks for, on its row; a profile that pins its models refuses any other.
  const pinned = checkModel(call, wire, bytes, call.grant ? upstream.models : undefined, upstream.origin);
  if (pinned) return pinned;

  // 7. Send, and on to a fallback when one takes the failure over.
  const out = { upstream, wire, path, query, headers, lines, body: bytes, set: cred.set, credentialKind: cred.kind, rewritten: !!plugins };
  const sent = await sendOut(ctx, call, targets, out);
  if (sent instanceof Response) return sent;

  // 8. The answer, back to the agent as it came, read on the way.
  return await answer(ctx, call, sent, wire, bytes?.length ?? 0);
}
