/**
 * Review (issue 30): comments on lines of a task's diff sent as its next turn's message (from the
 * task page or `lazy send T --review F`), and what waits for a person (the dashboard's Home):
 * done tasks to review, and the agents' questions (MCP ask_human) in full. Every comment is
 * checked against the diff as it is now (review/index.ts): one on a line the diff does not show
 * is refused with the reason, and nothing is sent. The message goes the way `lazy send`'s does
 * (runner.start), so a reply to a question is a send too.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import type { Config } from "../../config";
import { question, rows } from "../../dashboard";
import { taskDiff } from "../../diff";
import * as Review from "../../review";
import type { Runner } from "../../runner";
import { actions, Tasks } from "../../store";
import { LazyError } from "../../util/errors";
import { checkPrompt } from "../../util/prompt";
import { body, taskRef } from "./input";

export interface ReviewDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
  config: () => Config;
  runner: Pick<Runner, "start">;
}

const Body = z.strictObject({
  comments: z
    .array(
      z.strictObject({
        path: z.string().min(1).max(4096),
        line: z.number().int().positive(),
        side: z.enum(["new", "old"]).optional(),
        text: z.string().max(8000),
      }),
    )
    .max(Review.MAX_COMMENTS),
  message: z.string().max(8000).optional(),
});

/** Most tasks Home lists in each of its "waiting for you" lists. */
const INBOX = 50;

export function reviewRoutes(d: ReviewDeps) {
  return new Elysia()
    .post(
      "/api/tasks/:ref/review",
      async ({ params, body: input }) => {
        const task = Tasks.resolve(d.db, taskRef(params));
        const ref = task.code ?? task.id;
        if (!input.comments.length) throw new LazyError("invalid_input", "The review has no comment: comment on a line of the diff first.");
        if (!actions(task.status).includes("send"))
          throw new LazyError(
            "conflict",
            `Task ${ref} is ${task.status}: a review goes to the agent as its next turn, and ${task.status === "running" ? "its turn is still running (wait for it to end, or lazy stop it)" : "it has no next turn"}.`,
          );
        const diff = await taskDiff(d.root, ref);
        const checked = Review.check(
          diff,
          input.comments.map((c) => ({ ...c, side: c.side ?? "new" })),
        );
        if (checked.problems.length)
          throw new LazyError(
            "invalid_input",
            `The review was not sent: ${checked.problems.length} comment(s) name no line of ${diff.branch}'s diff.`,
            checked.problems,
          );
        const message = checkPrompt(Review.message(diff.branch, checked.ok, input.message), "review");
        const started = await d.runner.start(ref, message);
        // The comments as data beside the message the agent got (lazy export's review part).
        Tasks.addEvent(d.db, task.id, "review", {
          comments: checked.ok.map((c) => ({ path: c.path, line: c.line, side: c.side, text: c.text })),
          ...(input.message?.trim() ? { note: input.message.trim() } : {}),
        });
        return { task: started, comments: checked.ok.length, message };
      },
      body(Body),
    )
    .get("/api/board/inbox", () => {
      const config = d.config();
      const done = Tasks.page(d.db, { status: "done", limit: INBOX }).tasks;
      const waiting = Tasks.page(d.db, { status: "waiting", limit: INBOX }).tasks;
      const asked = waiting.flatMap((t) => {
        const q = question(d.db, t);
        return q ? [{ task: t, question: q.text, at: q.at }] : [];
      });
      const asking = rows(
        d.db,
        config,
        asked.map((a) => a.task),
      );
      return {
        review: rows(d.db, config, done),
        questions: asked.map((a, i) => ({
          task: asking[i]!,
          question: a.question,
          at: a.at,
        })),
      };
    });
}
