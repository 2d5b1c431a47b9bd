/**
 * The MCP token registry: which bearer token stands for which caller of lazy's MCP tools —
 * a task's agent, or a builder session. Every call is attributed by its token, never by what
 * the agent says. It lives in `mcp-tokens.json` in the daemon's state folder (0600, written
 * atomically), beside the grants and never under the project root. A task's token is revoked
 * when its session ends, independently of its grants (docs: "Lifetime"), and is pinned to its
 * container's address where the task's placeholder is.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import * as Files from "../../util/files";
import * as Log from "../../util/log";

const log = Log.create("mcp");

export const FILE_NAME = "mcp-tokens.json";

export const Holder = z
  .object({
    token: z.string().min(32).describe("the bearer token the harness sends to lazy's MCP route"),
    kind: z.enum(["task", "builder"]).describe("a task's agent, or a builder session"),
    taskId: z.string().nullable().describe("the task (kind task); null for a builder session"),
    session: z.string().nullable().describe("the builder session's name (kind builder)"),
    pid: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .describe("the lazy build process the session runs in (kind builder): once it is gone, the session has ended"),
    pinnedIp: z
      .string()
      .nullable()
      .optional()
      .describe(
        "the task container's address (kind task, where Docker gives each container its own): the token works from there only, like the task's placeholder; null once that container stopped (from nowhere until the next turn pins it again); absent: never pinned",
      ),
    createdAt: z.string(),
  })
  .describe("One MCP token and the caller it stands for");
export type Holder = z.infer<typeof Holder>;

const Registry = z.object({ version: z.literal(1), tokens: z.array(Holder) }).describe(`The ${FILE_NAME} file`);

export class McpTokens {
  readonly #path: string;
  readonly #byToken = new Map<string, Holder>();

  private constructor(path: string) {
    this.#path = path;
  }

  static open(stateDir: string): McpTokens {
    Files.ensurePrivateDir(stateDir);
    const t = new McpTokens(join(stateDir, FILE_NAME));
    t.#load();
    return t;
  }

  lookup(token: string): Holder | undefined {
    return this.#byToken.get(token);
  }

  /** The task's token, minted on first use (the same one across turns, like its grant). */
  forTask(taskId: string): Holder {
    for (const h of this.#byToken.values()) if (h.kind === "task" && h.taskId === taskId) return h;
    return this.#add({ kind: "task", taskId, session: null });
  }

  /** The builder session's token, minted on first use; `pid` is the process the session runs in now. */
  forBuilder(session: string, pid: number | null = null): Holder {
    for (const h of this.#byToken.values())
      if (h.kind === "builder" && h.session === session) {
        if ((h.pid ?? null) === pid) return h;
        const moved = { ...h, pid };
        this.#byToken.set(h.token, moved);
        this.#save();
        return moved;
      }
    return this.#add({ kind: "builder", taskId: null, session, pid });
  }

  /** The builder sessions, with the process each runs in (null: not known). */
  builders(): { session: string; pid: number | null }[] {
    return [...this.#byToken.values()]
      .filter((h) => h.kind === "builder" && h.session)
      .map((h) => ({ session: h.session!, pid: h.pid ?? null }));
  }

  /**
   * Accept the task's token only from `ip` from now on (its container's address, where the
   * engine lets lazy pin: the same rule as the task's placeholder, grants.ts `pin`).
   */
  pin(taskId: string, ip: string): void {
    const h = this.forTask(taskId);
    if (h.pinnedIp === ip) return;
    this.#byToken.set(h.token, { ...h, pinnedIp: ip });
    this.#save();
  }

  /**
   * The task's container is stopping: its address stops redeeming the token before Docker may
   * hand it to another container. The token stays pinned, to no address, until the next pin.
   */
  unpin(taskId: string): void {
    for (const h of this.#byToken.values())
      if (h.kind === "task" && h.taskId === taskId && typeof h.pinnedIp === "string") {
        this.#byToken.set(h.token, { ...h, pinnedIp: null });
        this.#save();
      }
  }

  revokeTask(taskId: string): number {
    return this.#revokeWhere((h) => h.kind === "task" && h.taskId === taskId);
  }

  revokeBuilder(session: string): number {
    return this.#revokeWhere((h) => h.kind === "builder" && h.session === session);
  }

  #add(h: Omit<Holder, "token" | "createdAt">): Holder {
    const holder: Holder = { ...h, token: `lazy-mcp-${randomBytes(24).toString("hex")}`, createdAt: new Date().toISOString() };
    this.#byToken.set(holder.token, holder);
    this.#save();
    return holder;
  }

  #revokeWhere(match: (h: Holder) => boolean): number {
    let n = 0;
    for (const [t, h] of this.#byToken)
      if (match(h)) {
        this.#byToken.delete(t);
        n++;
      }
    if (n) this.#save();
    return n;
  }

  #load(): void {
    if (!existsSync(this.#path)) return;
    try {
      for (const h of Registry.parse(JSON.parse(readFileSync(this.#path, "utf8"))).tokens) this.#byToken.set(h.token, h);
    } catch (e) {
      // A broken registry strands no secret: its tokens stop working and are minted again.
      log.warn(`${this.#path} is not a valid MCP token registry (${(e as Error).message}); starting an empty one`);
    }
  }

  #save(): void {
    Files.writeFileAtomic(this.#path, JSON.stringify({ version: 1, tokens: [...this.#byToken.values()] }, null, 2), 0o600);
  }
}
