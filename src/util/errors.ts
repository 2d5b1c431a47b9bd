/**
 * lazy's named errors. Every failure a user can see is one of these, and it is turned into
 * words in exactly two places: the daemon's HTTP error handler and the CLI's error printer.
 * The message is one actionable sentence; it never contains a secret.
 *
 * A refusal the core makes as data (`LazyError.of(code, facts)`) carries no sentence of its
 * own: its `facts` (a `reason` and what the words are made of) are worded by the voice of the
 * process it is in — the daemon installs the API's (daemon/words.ts), the CLI its own
 * (cli/words.ts) — and each edge words it again from the facts (the API's answer, the CLI's
 * printer). Without a voice installed (a unit test) the message is the code and facts, plain.
 */
export type ErrorCode =
  | "config_invalid"
  | "config_untrusted"
  | "not_found"
  | "ambiguous"
  | "invalid_input"
  | "conflict"
  | "daemon_unavailable"
  | "daemon_failed"
  | "unauthorized"
  | "forbidden"
  | "credential_missing"
  | "proxy_unavailable"
  | "launch_refused"
  | "preflight_refused"
  | "disk_full"
  | "internal";

const httpStatus: Record<ErrorCode, number> = {
  config_invalid: 422,
  config_untrusted: 403,
  not_found: 404,
  ambiguous: 409,
  invalid_input: 400,
  conflict: 409,
  daemon_unavailable: 503,
  daemon_failed: 500,
  unauthorized: 401,
  forbidden: 403,
  credential_missing: 424,
  proxy_unavailable: 503,
  launch_refused: 409,
  preflight_refused: 409,
  disk_full: 507,
  internal: 500,
};

/**
 * What a refusal made as data says, by reason: the facts its words are made of (no sentence;
 * `why`/`summary`/`remedy` are a lower layer's own wording of its part, passed on as is).
 */
export type Facts =
  /** A profile's credential: not mapped for its provider, or not stored. */
  | { reason: "credential_unmapped"; profile: string; provider: string; why: string }
  | { reason: "credential_not_stored"; profile: string; credential: string }
  /** A best-of-N group refused because some profiles' credentials are missing (each one's facts). */
  | { reason: "group_credentials"; missing: Facts[] }
  /** trusted.json is another user's or writable by others (`how`). */
  | { reason: "trust_record_foreign"; record: string; how: string }
  | { reason: "trust_record_unreadable"; error: string }
  /** lazy.toml is new or changed and not trusted; the keys are the error's details. */
  | { reason: "config_not_trusted"; file: string; dir: string; changed: boolean }
  | { reason: "dockerfile_changed"; dockerfile: string; file: string; root: string }
  /** Files that go into the task image or its tasks changed: each as `path (how)`; `more` beyond them. */
  | { reason: "build_files_changed"; root: string; since: string | null; changed: string[]; more: number }
  /** The model proxy is not ready, so `what` cannot start. */
  | { reason: "proxy_not_ready"; what: "turn" | "launch" | "builder" }
  /** Running as root, the agent's uid cannot read the repository's `dir` (its `mode`, octal). */
  | { reason: "agent_cannot_read"; uid: number; dir: string; mode: string }
  | { reason: "container_vanished"; taskId: string }
  | { reason: "setup_failed"; exit: number; task: string }
  /** A blocking preflight check (src/preflight): which, and what it found (its `Found`: a kind and facts). */
  | { reason: "preflight"; check: string; found: { kind: string } };

/** Words for a refusal made as data, in one process's voice. */
export type Voice = (code: ErrorCode, facts: Facts) => string;

/** With no voice installed: the code and the facts, plain (what a unit test sees). */
const plain: Voice = (code, facts) => `${code}: ${JSON.stringify(facts)}`;
let voice: Voice = plain;

/**
 * The process's edge installs its voice (the daemon's API, the CLI) before anything is refused.
 * Returns the voice it replaced, for whoever installs one for a while (a test) to put back.
 */
export function speak(v: Voice): Voice {
  const was = voice;
  voice = v;
  return was;
}

export class LazyError extends Error {
  readonly code: ErrorCode;
  /** Extra lines printed under the sentence (config problems, candidates). */
  readonly details: string[];
  /** A refusal made as data: what its words are made of (the edges word it from these). */
  readonly facts: Facts | undefined;
  constructor(code: ErrorCode, message: string, details: string[] = [], facts?: Facts) {
    super(message);
    this.name = "LazyError";
    this.code = code;
    this.details = details;
    this.facts = facts;
  }
  /** A refusal as data: its code and facts, worded by the process's voice. */
  static of(code: ErrorCode, facts: Facts, details: string[] = []): LazyError {
    return new LazyError(code, voice(code, facts), details, facts);
  }
  get status(): number {
    return httpStatus[this.code];
  }
  toJSON() {
    return { error: { code: this.code, message: this.message, details: this.details, ...(this.facts ? { facts: this.facts } : {}) } };
  }
  /** The API's answer: as toJSON, its message worded from the facts by the API's voice. */
  answer(words: Voice) {
    const body = this.toJSON();
    if (this.facts) body.error.message = words(this.code, this.facts);
    return body;
  }
  static fromJSON(body: unknown, fallback: string): LazyError {
    const e = (body as { error?: { code?: string; message?: string; details?: string[]; facts?: Facts } })?.error;
    if (e && typeof e.message === "string") {
      const code = (e.code && e.code in httpStatus ? e.code : "internal") as ErrorCode;
      const facts = e.facts && typeof e.facts === "object" && typeof e.facts.reason === "string" ? e.facts : undefined;
      return new LazyError(code, e.message, Array.isArray(e.details) ? e.details : [], facts);
    }
    return new LazyError("internal", fallback);
  }
}
