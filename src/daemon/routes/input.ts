/** What every route does with its input: a request body checked against its schema, a task reference from the path. */
import type { z } from "zod";
import { LazyError } from "../../util/errors";

export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success)
    throw new LazyError(
      "invalid_input",
      // A problem said as a whole sentence (a prompt's bound) is said as it is.
      r.error.issues.every((i) => i.code === "custom" && i.message.endsWith("."))
        ? r.error.issues.map((i) => i.message).join(" ")
        : `Bad request: ${r.error.issues.map((i) => `${i.path.join(".") || "body"} ${i.message}`).join("; ")}.`,
    );
  return r.data;
}

/** The task reference (a code or an id prefix) in a `/api/tasks/:ref/...` path. */
export const taskRef = (params: { ref: string }): string => decodeURIComponent(params.ref);
