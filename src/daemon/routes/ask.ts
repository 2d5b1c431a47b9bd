/**
 * lazy's own model calls a person asks for: `lazy ask "question" [--task T]` (about the project
 * and its tasks). The answer comes from a throwaway container on the agent profile, through the
 * proxy (own-calls/); its prompts are own-calls/prompts.ts's.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { askPrompt, reportPrompt } from "../../own-calls";
import type { Runner } from "../../runner";
import { Tasks } from "../../store";
import { promptSchema } from "../../util/prompt";
import { body } from "./input";
import { parseSince } from "./watch";

export interface AskDeps {
  db: Database;
  root: string;
  runner: { calls: Pick<Runner["calls"], "ask">; mustTrust(): void };
}

const Ask = z.strictObject({ question: promptSchema("question").pipe(z.string().max(8000)), task: z.string().optional() });

export function askRoutes(d: AskDeps) {
  return new Elysia()
    .post(
      "/api/report",
      async ({ body: { since } }) => {
        d.runner.mustTrust();
        const from = parseSince(since);
        const answer = await d.runner.calls.ask(reportPrompt(d.db, from), { purpose: "lazy report" });
        return { report: answer.text, since: new Date(from).toISOString(), profile: answer.profile };
      },
      body(z.strictObject({ since: z.string().default("7d") })),
    )
    .post(
      "/api/ask",
      async ({ body: input }) => {
        d.runner.mustTrust();
        const task = input.task !== undefined ? Tasks.resolveFilter(d.db, [input.task])![0] : undefined;
        const answer = await d.runner.calls.ask(await askPrompt(d.db, d.root, input.question, task), { task, purpose: "lazy ask" });
        return { answer: answer.text, profile: answer.profile, task: task ?? null };
      },
      body(Ask),
    );
}
