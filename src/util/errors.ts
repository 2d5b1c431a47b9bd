/**
 * lazy's named errors. Every failure a user can see is one of these, and it is turned into
 * words in exactly two places: the daemon's HTTP error handler and the CLI's error printer.
 * The message is one actionable sentence; it never contains a secret.
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

export class LazyError extends Error {
  readonly code: ErrorCode;
  /** Extra lines printed under the sentence (config problems, candidates). */
  readonly details: string[];
  constructor(code: ErrorCode, message: string, details: string[] = []) {
    super(message);
    this.name = "LazyError";
    this.code = code;
    this.details = details;
  }
  get status(): number {
    return httpStatus[this.code];
  }
  toJSON() {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
  static fromJSON(body: unknown, fallback: string): LazyError {
    const e = (body as { error?: { code?: string; message?: string; details?: string[] } })?.error;
    if (e && typeof e.message === "string") {
      const code = (e.code && e.code in httpStatus ? e.code : "internal") as ErrorCode;
      return new LazyError(code, e.message, Array.isArray(e.details) ? e.details : []);
    }
    return new LazyError("internal", fallback);
  }
}
