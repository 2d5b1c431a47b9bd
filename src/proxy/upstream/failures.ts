/**
 * What went wrong on the way to an upstream, in words: the client's failure (NetError, with
 * the code the classifier reads), the classification (a reset, a connect failure, a failed TLS
 * handshake, a timeout), and the sentence that names the party: the provider, with host,
 * profile and credential label, and how far the request got.
 */

/** A failure with the code the classifier reads: what this client throws, like fetch's errors. */
export class NetError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The code this client gives a failed TLS handshake (fetch gives OpenSSL's: `CERT_HAS_EXPIRED`, …). */
export const TLS_FAILED = "ETLS";

export type NetFailure = "reset" | "connect" | "tls" | "timeout";

/** OpenSSL's and Bun's names for a failed handshake or a certificate refused. */
const TLS_CODE = /^(ETLS|ERR_TLS_|ERR_SSL_|.*CERT|.*_SIGNED_|UNABLE_TO_|SELF_SIGNED|HOSTNAME_MISMATCH|.*HANDSHAKE)/;

export function classify(e: unknown): NetFailure | "aborted" | "other" {
  const err = e as { name?: string; code?: string | number };
  if (err?.name === "AbortError") return "aborted";
  if (err?.name === "TimeoutError" || err?.code === "ETIMEDOUT") return "timeout";
  const code = String(err?.code ?? "");
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ConnectionClosed") return "reset";
  if (
    code === "ECONNREFUSED" ||
    code === "ENOTFOUND" ||
    code === "EAI_AGAIN" ||
    code === "EHOSTUNREACH" ||
    code === "ENETUNREACH" ||
    code === "FailedToOpenSocket" ||
    code === "ConnectionRefused"
  )
    return "connect";
  if (code && TLS_CODE.test(code)) return "tls";
  return "other";
}

/** The kind provider health counts a failure as: a failed handshake is a failed connect. */
export function healthKind(f: NetFailure): "reset" | "connect" | "timeout" {
  return f === "tls" ? "connect" : f;
}

const what: Record<NetFailure, string> = {
  reset: "reset the connection",
  connect: "could not be reached",
  tls: "failed the TLS handshake",
  timeout: "sent no response headers",
};

/**
 * An error's message up to its first sentence's end: Bun's fetch adds advice after a ". "
 * ("Unable to connect. Is the computer able to access the url?"). A dot inside a word (a host
 * name, a version) is not an end: `getaddrinfo ENOTFOUND no-such-host.example.invalid` stays whole.
 */
export function firstSentence(message: string | undefined): string {
  const m = (message ?? "").split("\n")[0]!;
  const end = m.search(/\.(\s|$)/);
  return end === -1 ? m : m.slice(0, end);
}

/** `Anthropic (api.anthropic.com, profile code-builder, credential anthropic) reset the connection 4 ms into the request` */
export function providerFailure(
  p: { provider: string; host: string; profile: string | null; credential: string | null },
  failure: NetFailure,
  ms: number,
  detail?: string,
): string {
  const who = [p.host, p.profile ? `profile ${p.profile}` : null, p.credential ? `credential ${p.credential}` : null]
    .filter(Boolean)
    .join(", ");
  const why = failure === "connect" ? (detail ?? "connection failed") : failure === "tls" ? (detail ?? "handshake failed") : undefined;
  return `${p.provider} (${who}) ${what[failure]} ${why ? `(${why}) ` : ""}${Math.round(ms)} ms into the request`;
}
