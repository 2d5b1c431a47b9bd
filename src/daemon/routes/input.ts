/**
 * What every route does with its input. A request body is checked by Elysia against the zod
 * schema the route names (`body(Schema)`: zod 4 is a Standard Schema, so the handler gets the
 * parsed, typed value, defaults filled in); a body that fails is worded here, once, for api.ts's
 * error handler. And the task reference from a `/api/tasks/:ref/...` path.
 */
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { z } from "zod";
import type { Actor } from "../../runner";
import { LazyError } from "../../util/errors";

/**
 * A route's body schema, for its options (`.post(path, handler, body(Schema))`). A JSON `null`
 * reads as `{}`, as every route has always taken it.
 */
export const body = <S extends z.ZodType>(schema: S) => ({ body: z.preprocess((v) => v ?? {}, schema) });

/** A problem with a body, as zod (through Standard Schema) reports it. */
interface Issue {
  readonly code?: string;
  readonly message: string;
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[];
}

/** The problems a schema finds in a value (none: it passes). */
export function issuesOf(schema: unknown, value: unknown): readonly Issue[] {
  const standard = (schema as { "~standard"?: { validate: (v: unknown) => unknown } } | undefined)?.["~standard"];
  const r = standard?.validate(value) as { issues?: readonly Issue[] } | Promise<unknown> | undefined;
  return r && !(r instanceof Promise) ? (r.issues ?? []) : [];
}

/** The refusal of a body with these problems. */
export function badBody(issues: readonly Issue[]): LazyError {
  const path = (i: Issue) => (i.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".");
  return new LazyError(
    "invalid_input",
    // A problem said as a whole sentence (a prompt's bound) is said as it is.
    !issues.length
      ? "Bad request: the body is not what this route takes."
      : issues.every((i) => i.code === "custom" && i.message.endsWith("."))
        ? issues.map((i) => i.message).join(" ")
        : `Bad request: ${issues.map((i) => `${path(i) || "body"} ${i.message}`).join("; ")}.`,
  );
}

/** The task reference (a code or an id prefix) in a `/api/tasks/:ref/...` path. */
export const taskRef = (params: { ref: string }): string => decodeURIComponent(params.ref);

/**
 * Who asks (runner `Actor`): the OS user the daemon runs as — only that user (or root) can read
 * the token in its 0700 state folder — and whether the request came with the token (the CLI, or
 * a script holding it) or the dashboard's session cookie.
 */
export function actorOf(request: Request): Actor {
  const me = userInfo();
  return { user: userName(me), uid: me.uid, via: request.headers.get("authorization")?.startsWith("Bearer ") ? "cli" : "dashboard" };
}

/** The user's login name; Bun's userInfo() says "unknown" for some (root here), so /etc/passwd is asked then. */
function userName(me: { username: string; uid: number }): string {
  if (me.username && me.username !== "unknown") return me.username;
  try {
    const line = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.split(":")[2] === String(me.uid));
    if (line) return line.split(":")[0]!;
  } catch {
    // no passwd file (macOS keeps users elsewhere): the uid alone says it
  }
  return `uid ${me.uid}`;
}
