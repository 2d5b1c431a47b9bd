/**
 * The MCP route's tokens: one kind of secret in the grant registry (grants.ts), a bearer token
 * that stands for a task's agent or a builder session — every MCP call is attributed by it,
 * never by what the agent says. They are kept in the registry's file beside the placeholders,
 * revoked with them (one revokeTask, one revokeBuilder) and pinned by the same rule (pin.ts): a
 * task's token is accepted where its agent placeholder is. This file holds their shape, the
 * MCP route's view of them (`McpTokens`), and the way forward from mcp-tokens.json, the file
 * of their own they had before (`readOld`).
 */

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import * as Log from "../../util/log";
import { Pin } from "./pin";

const log = Log.create("mcp");

/** A host process id: what a host grant or a builder session lives as long as. */
export const Pid = z.number().int().positive();

export const McpToken = z
  .object({
    token: z.string().min(32).describe("the bearer token the harness sends to lazy's MCP route"),
    kind: z.enum(["task", "builder"]).describe("a task's agent, or a builder session"),
    taskId: z.string().nullable().describe("the task (kind task); null for a builder session"),
    session: z.string().nullable().describe("the builder session's name (kind builder)"),
    pid: Pid.nullable()
      .optional()
      .describe("the lazy build process the session runs in (kind builder): once it is gone, the session has ended"),
    ...Pin.shape,
    createdAt: z.string(),
  })
  .describe("One MCP token and the caller it stands for");
export type McpToken = z.infer<typeof McpToken>;

/**
 * What the MCP route and the launches need of the registry's MCP tokens. It shares the
 * registry's table and its save: revoking and pinning are the registry's own (grants.ts).
 */
export class McpTokens {
  constructor(
    private readonly byToken: Map<string, Readonly<McpToken>>,
    private readonly save: () => void,
  ) {}

  lookup(token: string): Readonly<McpToken> | undefined {
    return this.byToken.get(token);
  }

  /** The task's token, minted on first use (the same one across turns, like its placeholder). */
  forTask(taskId: string): Readonly<McpToken> {
    for (const h of this.byToken.values()) if (h.kind === "task" && h.taskId === taskId) return h;
    return this.add({ kind: "task", taskId, session: null, pinnedIp: null });
  }

  /** The builder session's token, minted on first use; `pid` is the process the session runs in now. */
  forBuilder(session: string, pid: number | null = null): Readonly<McpToken> {
    for (const h of this.byToken.values())
      if (h.kind === "builder" && h.session === session) {
        if ((h.pid ?? null) === pid) return h;
        const moved = Object.freeze({ ...h, pid });
        this.byToken.set(h.token, moved);
        this.save();
        return moved;
      }
    return this.add({ kind: "builder", taskId: null, session, pid, pinnedIp: null });
  }

  /** The builder sessions, with the process each runs in (null: not known). */
  builders(): { session: string; pid: number | null }[] {
    return [...this.byToken.values()]
      .filter((h) => h.kind === "builder" && h.session)
      .map((h) => ({ session: h.session!, pid: h.pid ?? null }));
  }

  private add(h: Omit<McpToken, "token" | "createdAt">): Readonly<McpToken> {
    const t = Object.freeze({ ...h, token: `lazy-mcp-${randomBytes(24).toString("hex")}`, createdAt: new Date().toISOString() });
    this.byToken.set(t.token, t);
    this.save();
    return t;
  }
}

/** The file MCP tokens were kept in before they joined the grant registry. */
export const OLD_FILE = "mcp-tokens.json";

const Old = z.object({
  version: z.literal(1),
  tokens: z.array(McpToken.omit({ pinnedIp: true, callIps: true }).extend({ pinnedIp: z.string().nullable().optional() })),
});

/**
 * The tokens an older daemon left in mcp-tokens.json, in the registry's form: its null pin
 * ("its container stopped: from no address") becomes the registry's pinned-to-nothing, and an
 * absent one stays unpinned. `done` removes the old file once the registry has saved them.
 * A broken old file strands no secret: its tokens stop working and are minted again.
 */
export function readOld(stateDir: string): { tokens: McpToken[]; done: () => void } | undefined {
  const path = join(stateDir, OLD_FILE);
  if (!existsSync(path)) return undefined;
  const done = () => rmSync(path, { force: true });
  try {
    const old = Old.parse(JSON.parse(readFileSync(path, "utf8")));
    return { tokens: old.tokens.map((t) => (t.pinnedIp === null ? { ...t, pinnedIp: null, callIps: [] } : t)), done };
  } catch (e) {
    log.warn(`${path} is not a valid MCP token registry (${(e as Error).message}); its tokens are not carried over`);
    return { tokens: [], done };
  }
}
