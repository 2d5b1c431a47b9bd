/**
 * One request on its way through the path: who it is from (the grant its placeholder resolves
 * to, never what it says about itself: no header names a task or a role; with no grant the row
 * names none), the audit row's head, and the two ways it ends early or late — `record` (a row,
 * with the hop, lazy's own time and what plugins noted) and `refuse` (a refusal, its row and a
 * rate-limited log line), or `refuseUnknown` for a caller lazy cannot attribute (counted, not a
 * row: audit/refusals.ts). Each stage (forward.ts) reads and writes it.
 */
import type { Server } from "bun";
import { pathOf } from "../../util/url";
import { auditRow, type Outcome, type RowHead } from "../audit";
import type { Grant } from "../identity";
import { dropBody, type Pass } from "../listen";
import type { Context } from "./context";
import { presented } from "./headers";

export class Call {
  readonly started = performance.now();
  /**
   * The path and query asked for; read once (`req.url` builds a new string each time). On the
   * Cursor route, the path its rows show: the real one carries the placeholder.
   */
  readonly target: string;
  /** The credential presented, if any, and the grant it resolves to. */
  readonly token: string | undefined;
  readonly grant: Grant | undefined;
  readonly base: RowHead;
  /** Which hop the row is about (a reroute's, fallback.ts), lazy's own time before it left, and when the answer's head came back. */
  hop = 0;
  lazyInMs: number | null = null;
  back = 0;
  /** What request plugins noted: it rides on every row this request makes. */
  pluginNote: string | null = null;
  /** Until the body is read, a refusal throws it away as it arrives (closing a socket with unread bytes resets it, gate.ts). */
  unread = true;

  /**
   * `presentedIn`: where the Cursor route's caller put its credential (in its path, cursor.ts), and
   * the path its rows show instead, without it; otherwise the credential comes from the headers.
   */
  constructor(
    private ctx: Context,
    readonly req: Request,
    readonly server: Server<undefined>,
    readonly pass: Pass,
    presentedIn?: { token: string | undefined; path: string },
  ) {
    // The listener's idle timeout holds until the body is read (gate.ts); no deadline after it.
    this.target = presentedIn ? presentedIn.path : pathOf(req.url);
    this.token = presentedIn ? presentedIn.token : presented(req.headers);
    const grant = this.token ? ctx.grants.lookup(this.token) : undefined;
    this.grant = grant;
    this.base = {
      at: Date.now(),
      taskId: grant ? grant.taskId : null,
      taskRef: grant ? grant.taskRef : null,
      role: grant ? grant.role : null,
      profile: grant?.profile ?? null,
      credential: null,
      upstream: "",
      method: req.method,
      path: presentedIn ? presentedIn.path : pathOnly(this.target),
    };
  }

  record(o: Outcome): void {
    o.hop ??= this.hop;
    o.lazyInMs ??= this.lazyInMs;
    o.lazyOutMs ??= this.back ? performance.now() - this.back : null;
    if (this.pluginNote) o.note = o.note ? `${this.pluginNote}; ${o.note}` : this.pluginNote;
    this.ctx.audit.record(auditRow(this.base, performance.now() - this.started, o));
  }

  refuse(res: Response, note: string, upstream: string): Response {
    if (this.unread) dropBody(this.req, this.pass);
    this.base.upstream = upstream;
    this.record({ status: res.status, note });
    return this.logged(res, note);
  }

  /**
   * Refuse a caller whose credential redeems no grant lazy can vouch for (caller.ts): counted per
   * minute, source address and reason on this thread, never a row, so a flood of them cannot
   * push a task's rows out of the trail's bound (audit/refusals.ts).
   */
  refuseUnknown(res: Response, note: string): Response {
    if (this.unread) dropBody(this.req, this.pass);
    const b = this.base;
    this.ctx.audit.refused({
      at: b.at,
      from: sourceOf(this.req, this.server),
      reason: note,
      status: res.status,
      taskId: b.taskId,
      taskRef: b.taskRef,
      method: b.method,
      path: b.path,
    });
    return this.logged(res, note);
  }

  private logged(res: Response, note: string): Response {
    // A container can send refused requests by the thousand: one line a minute per kind.
    this.ctx.log.repeated(
      "warn",
      `${res.status} ${note}`,
      `${res.status} ${this.req.method} ${this.base.path} ${note}${this.base.taskRef ? ` (task ${this.base.taskRef})` : ""}`,
    );
    return res;
  }
}

/** The address a request came from, as a refusal counts it. */
export const sourceOf = (req: Request, server: Server<undefined>): string =>
  (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "");

function pathOnly(target: string): string {
  const q = target.indexOf("?");
  return (q === -1 ? target : target.slice(0, q)).slice(0, 300);
}
