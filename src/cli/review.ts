/**
 * `lazy send T --review F`: a file of review comments (review/index.ts FORMAT), read within the
 * prompt bound, checked for its own form here (each bad line named `F:N`), then against the
 * task's diff by the daemon, which sends them as the next turn's message or refuses them all.
 */

import * as Review from "../review";
import type { Task } from "../store";
import { LazyError } from "../util/errors";
import { promptFrom } from "./prompt-input";

/** The comments of the review file `file` (`-`: standard input), or the refusal naming each bad line. */
export async function reviewFile(file: string): Promise<Review.Comment[]> {
  const text = await promptFrom("review", undefined, file);
  const name = file === "-" ? "(standard input)" : file;
  const { comments, problems } = Review.parseFile(text, name);
  if (problems.length) throw new LazyError("invalid_input", `${name} is not a review: nothing was sent.`, problems);
  if (!comments.length) throw new LazyError("invalid_input", `${name} has no comment (${Review.FORMAT}).`);
  return comments;
}

export interface Reviewed {
  task: Task;
  comments: number;
  message: string;
}

/** What --help says of the flag. */
export const reviewArg = {
  review: {
    type: "string",
    description: `Send review comments on the task's diff from this file (- for standard input), as a code review would: ${Review.FORMAT}. A comment on a line the diff does not show is refused, and nothing is sent. The message, if given, is added after the comments`,
  },
} as const;
