/**
 * Best-of-N groups: make one (a candidate task per profile from one prompt), compare its
 * candidates side by side (dashboard/compare.ts), and run the project's [review] check on them.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { type Config, defaultProfile } from "../../config";
import { compare } from "../../dashboard";
import { MAX_CANDIDATES, type Runner } from "../../runner";
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
  runner: Pick<Runner, "addGroup" | "groups" | "mustTrust">;
}

export function groupRoutes(d: GroupDeps) {
  const view = (code: string) => {
    const tasks = d.runner.groups.members(code);
    return compare(d.db, d.config(), d.root, tasks[0]!.group!, tasks);
  };
  return new Elysia()
    .post(
      "/api/groups",
      async ({ body: b, set }) => {
        if (b.profiles && (b.n !== undefined || b.profile !== undefined))
          throw new LazyError("invalid_input", "Give either profiles (one per candidate) or a profile and n, not both.");
        if (!b.profiles && b.n === undefined)
          throw new LazyError("invalid_input", "Name the candidates: profiles (one per candidate), or n (and a profile).");
        if (b.n !== undefined && (b.n < 2 || b.n > MAX_CANDIDATES))
          throw new LazyError("invalid_input", `n is how many candidates: 2 to ${MAX_CANDIDATES}, not ${b.n}.`);
        const profiles =
          b.profiles?.map((p) => p.trim()) ?? Array.from({ length: b.n ?? 0 }, () => b.profile ?? defaultProfile(d.config()));
        if (profiles.some((p) => !p)) throw new LazyError("invalid_input", "An empty profile name in the list: --profiles a,b,c.");
        const r = await d.runner.addGroup({ prompt: b.prompt, profiles, code: b.code, title: b.title });
        set.status = 201;
        return r;
      },
      body(AddGroup),
    )
    .get("/api/groups/:code", ({ params }) => view(decodeURIComponent(params.code)))
    .post(
      "/api/groups/:code/check",
      async ({ params, body: { force } }) => {
        d.runner.mustTrust();
        const code = decodeURIComponent(params.code);
        const results = await d.runner.groups.checkAll(code, force);
        return { results, comparison: await view(code) };
      },
      body(z.strictObject({ force: z.boolean().optional() })),
    );
}
