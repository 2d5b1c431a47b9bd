/**
 * Best-of-N groups: make one (a candidate task per profile from one prompt), compare its
 * candidates side by side (src/compare), and run the project's [review] check on them.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { compare } from "../../compare";
import { type Config, defaultProfile } from "../../config";
import { candidatesDiff } from "../../diff";
import { MAX_CANDIDATES, type Runner } from "../../runner";
import type { Task } from "../../store";
import { LazyError } from "../../util/errors";
import { PROMPT_MAX_BYTES, promptSchema } from "../../util/prompt";
import { body } from "./input";

export const AddGroup = z.strictObject({
  prompt: promptSchema("prompt").describe(`What every candidate should do (not empty; at most ${PROMPT_MAX_BYTES} bytes).`),
  profiles: z.array(z.string()).optional().describe("One profile per candidate (a name may repeat)."),
  profile: z.string().optional().describe("With n: the one profile every candidate runs on (default: the agent role's)."),
  n: z.number().int().optional().describe("How many candidates on `profile`."),
  code: z.string().optional().describe("The group's code; its candidates are CODE-<profile> (or CODE-<n>)."),
  title: z.string().optional(),
});

export interface GroupDeps {
  db: Database;
  root: string;
  config: () => Config;
  runner: Pick<Runner, "addGroup" | "groups" | "mustTrust" | "groupReady">;
}

export function groupRoutes(d: GroupDeps) {
  /** One profile per candidate, from either form of the request. */
  const profilesOf = (b: { profiles?: string[]; profile?: string; n?: number }): string[] => {
    if (b.profiles && (b.n !== undefined || b.profile !== undefined))
      throw new LazyError("invalid_input", "Give either profiles (one per candidate) or a profile and n, not both.");
    if (!b.profiles && b.n === undefined)
      throw new LazyError("invalid_input", "Name the candidates: profiles (one per candidate), or n (and a profile).");
    if (b.n !== undefined && (b.n < 2 || b.n > MAX_CANDIDATES))
      throw new LazyError("invalid_input", `n is how many candidates: 2 to ${MAX_CANDIDATES}, not ${b.n}.`);
    const profiles = b.profiles?.map((p) => p.trim()) ?? Array.from({ length: b.n ?? 0 }, () => b.profile ?? defaultProfile(d.config()));
    if (profiles.some((p) => !p)) throw new LazyError("invalid_input", "An empty profile name in the list: --profiles a,b,c.");
    return profiles;
  };
  /** The candidate of group `code` a person named (its code or id), or a refusal naming the group's candidates. */
  const candidate = (members: readonly Task[], group: string, which: unknown, side: string): Task => {
    const named = typeof which === "string" ? which.trim() : "";
    const found = named ? members.find((t) => t.code === named || t.id === named) : undefined;
    if (found) return found;
    const list = members.map((t) => t.code ?? t.id).join(", ");
    throw new LazyError(
      "invalid_input",
      named
        ? `"${named.slice(0, 80)}" is not a candidate of group ${group}: ${side} names one of ${list}.`
        : `Name two candidates of group ${group}: ?from=A&to=B, each one of ${list}.`,
    );
  };
  const view = (code: string) => {
    const tasks = d.runner.groups.members(code);
    return compare(d.db, d.config(), d.root, tasks[0]!.group!, tasks);
  };
  return new Elysia()
    .post(
      "/api/groups",
      async ({ body: b, set }) => {
        const r = await d.runner.addGroup({ prompt: b.prompt, profiles: profilesOf(b), code: b.code, title: b.title });
        set.status = 201;
        return r;
      },
      body(AddGroup),
    )
    .post(
      "/api/groups/ready",
      ({ body: b }) => {
        d.runner.groupReady(profilesOf(b));
        return { ok: true };
      },
      body(AddGroup.omit({ prompt: true, code: true, title: true })),
    )
    .get("/api/groups/:code", ({ params }) => view(decodeURIComponent(params.code)))
    .get("/api/groups/:code/diff", ({ params, query }) => {
      const members = d.runner.groups.members(decodeURIComponent(params.code));
      const group = members[0]!.group!;
      const from = candidate(members, group, query.from, "from");
      const to = candidate(members, group, query.to, "to");
      // Only the group's own tasks' branches reach git: refs/heads/lazy/<their ref>.
      return { group, from: from.code ?? from.id, to: to.code ?? to.id, ...candidatesDiff(d.root, from.code ?? from.id, to.code ?? to.id) };
    })
    .post(
      "/api/groups/:code/check",
      async ({ params, body: { force } }) => {
        d.runner.mustTrust();
        const code = decodeURIComponent(params.code);
        const results = await d.runner.groups.checkAll(code, force);
        let base: string | undefined;
        try {
          base = await d.runner.groups.checkBase(code, force);
        } catch (e) {
          base = (e as Error).message;
        }
        return { results, base: { ran: !base, ...(base ? { why: base } : {}) }, comparison: await view(code) };
      },
      body(z.strictObject({ force: z.boolean().optional() })),
    );
}
