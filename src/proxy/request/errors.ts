/**
 * The proxy's own answers, written once. A stage refuses with data (`Refusal`: a code and its
 * facts); this file alone turns one into the wire's words: the status, the error type, and the
 * sentence the harness shows its user, naming the cause and the remedy. Every one carries
 * `x-should-retry: false` so the SDKs do not hammer the proxy with a request that cannot
 * succeed, and its code in `x-lazy-refusal`. Failures name the party: the provider (with host, profile and credential label, and
 * how far the request got: upstream/failures.ts), or lazy itself ("lazy's proxy failed").
 */
import { notLive } from "../identity";
import { wayRefusal } from "../upstream";
import type { Refused, Wire } from "./surface";

export const NO_RETRY = { "x-should-retry": "false" };
/** The header that names a refusal's code beside its words (tools and tests match on it, never on the words). */
export const REFUSAL_HEADER = "x-lazy-refusal";

/** What the model in a pinned profile's request body was (model.ts). */
export type ModelProblem =
  | { problem: "unreadable" }
  | { problem: "none" }
  | { problem: "repeated"; count: number }
  | { problem: "not_string" }
  | { problem: "not_allowed"; model: string };

/** A refusal of lazy's proxy as data: its code and the facts its words are made of. */
export type Refusal =
  /** A request with no credential at all (only the HEAD probes pass without one). */
  | { code: "no_credential" }
  /** A placeholder no grant answers to; `route`: presented on the Cursor route. */
  | { code: "placeholder_unknown"; route?: "cursor" }
  | { code: "placeholder_beside_credential" }
  /** A credential of the caller's own, presented from another machine. */
  | { code: "own_credential_remote"; from: string }
  | { code: "service_placeholder"; task: string | null; service: string }
  /** A placeholder whose task (or host session, `task` null) has no running turn. */
  | { code: "placeholder_not_live"; task: string | null }
  /** `owner`: whose pin, as identity/pin.ts `pinOwner` says it. */
  | { code: "placeholder_off_pin"; owner: string; from: string }
  | { code: "profile_gone"; profile: string }
  /** Plain http:// that the host's proxy would carry (upstream/way.ts). `to`: the party. */
  | { code: "plain_through_proxy"; to: string; host: string; proxy: string }
  | { code: "cursor_placeholder_off_route"; method: string; path: string; profile: string }
  | { code: "budget_stop"; why: string }
  /** The forwarding surface (surface.ts): what this upstream forwards. */
  | { code: "path_refused"; method: string; path: string; allowed: string[] }
  | { code: "credential_unmapped"; provider: string; host: string; why: string }
  | { code: "credential_not_stored"; credential: string; provider: string; host?: string; profile?: string }
  | { code: "credential_malformed"; credential: string }
  /** `declared`: the Content-Length, null for a chunked body; `what`: a Cursor key exchange. */
  | { code: "body_too_large"; declared: number | null; limit: number; what?: "cursor_exchange" }
  | { code: "plugin_failed"; plugin: string; error: string }
  | { code: "plugin_refused"; method: string; path: string; plugin: string; reason: string }
  | { code: "plugin_body_too_large"; limit: number }
  | ({ code: "model_refused"; profile: string; models: string[] } & ModelProblem)
  /** The Cursor route's own (cursor.ts). */
  | { code: "cursor_route_malformed"; segments: number }
  | { code: "placeholder_on_host_route" }
  | { code: "cursor_profile_mismatch"; profile: string; gone: boolean }
  | { code: "cursor_credential_none"; profile: string };

type Code = Refusal["code"];
type Of<C extends Code> = Extract<Refusal, { code: C }>;

/** Each refusal's HTTP status and the wire's error type for it. */
const KIND: Record<Code, [number, string]> = {
  no_credential: [401, "authentication_error"],
  placeholder_unknown: [401, "authentication_error"],
  placeholder_beside_credential: [401, "authentication_error"],
  own_credential_remote: [401, "authentication_error"],
  service_placeholder: [401, "authentication_error"],
  placeholder_not_live: [401, "authentication_error"],
  placeholder_off_pin: [401, "authentication_error"],
  profile_gone: [401, "authentication_error"],
  plain_through_proxy: [403, "permission_error"],
  cursor_placeholder_off_route: [403, "permission_error"],
  budget_stop: [403, "permission_error"],
  path_refused: [403, "permission_error"],
  credential_unmapped: [401, "authentication_error"],
  credential_not_stored: [401, "authentication_error"],
  credential_malformed: [401, "authentication_error"],
  body_too_large: [413, "request_too_large"],
  plugin_failed: [500, "api_error"],
  plugin_refused: [403, "permission_error"],
  plugin_body_too_large: [500, "api_error"],
  model_refused: [403, "permission_error"],
  cursor_route_malformed: [400, "invalid_request_error"],
  placeholder_on_host_route: [401, "authentication_error"],
  cursor_profile_mismatch: [403, "permission_error"],
  cursor_credential_none: [401, "authentication_error"],
};

const MODEL_WHY: { [P in ModelProblem["problem"]]: (m: Extract<ModelProblem, { problem: P }>) => string } = {
  unreadable: () => "lazy could not read which model the request body asks for (it is not one JSON object)",
  none: () => "the request body names no model, so the upstream would choose one",
  repeated: (m) => `the request body names its model ${m.count} times`,
  not_string: () => "the request body's model is not a string",
  not_allowed: (m) => `model "${m.model}" is not allowed`,
};

/** Why a pinned profile's request was refused, in words (also its audit note). */
export function modelWhy(m: ModelProblem): string {
  return (MODEL_WHY[m.problem] as (m: ModelProblem) => string)(m);
}

/** The words of each refusal: what was refused, why, and what to do. */
const WORDS: { [C in Code]: (r: Of<C>) => string } = {
  no_credential: () =>
    "lazy's proxy refused a request with no credential: send the placeholder lazy gave the task (in x-api-key or Authorization: Bearer). Only the HEAD reachability probes pass without one.",
  placeholder_unknown: (r) =>
    r.route === "cursor"
      ? "lazy's proxy does not know this Cursor placeholder: the task's grant is gone. Start the task again: lazy start TASK."
      : "lazy's proxy does not know this placeholder: the task's grant is gone (the task ended, or was never started by this daemon). Start the task again: lazy start TASK.",
  placeholder_beside_credential: () =>
    "lazy's proxy refused a request carrying a placeholder beside another credential: send the placeholder lazy gave the task, alone.",
  own_credential_remote: (r) =>
    `lazy's proxy refused a credential that is not lazy's placeholder, presented from ${r.from}: only a session on this machine may bring its own; a task's agent sends the placeholder lazy gave it.`,
  service_placeholder: (r) =>
    `lazy's proxy refused task ${r.task}'s placeholder for the brokered service ${r.service}: it stands for that service's token and works only at its hosts, never as a model credential.`,
  placeholder_not_live: (r) =>
    `lazy's proxy refused this placeholder: ${notLive({ taskId: r.task, taskRef: r.task, role: r.task ? "agent" : "host" })}`,
  placeholder_off_pin: (r) => `lazy's proxy refused this placeholder: it belongs to ${r.owner} and was presented from ${r.from}.`,
  profile_gone: (r) =>
    `lazy's proxy refused the request: profile ${r.profile} is no longer in lazy.toml, so its placeholder leads nowhere. Start the task again with an existing profile.`,
  plain_through_proxy: (r) => wayRefusal({ via: "refused", host: r.host, proxy: r.proxy }, r.to),
  cursor_placeholder_off_route: (r) =>
    `lazy's proxy refused this placeholder on ${r.method} ${r.path}: it belongs to profile ${r.profile}, a cursor-agent profile, whose placeholder works only under /_lazy/cursor/<placeholder>/.`,
  budget_stop: (r) => `lazy's proxy stopped this turn: ${r.why}.`,
  path_refused: (r) => `lazy's proxy refuses ${r.method} ${r.path}: this upstream forwards only ${r.allowed.join(", ")}`,
  credential_unmapped: (r) => `lazy's proxy has no credential mapped for ${r.provider} (${r.host}): ${r.why}.`,
  credential_not_stored: (r) =>
    r.host === undefined
      ? `lazy's proxy has no credential "${r.credential}" for ${r.provider}: store it with lazy auth set ${r.credential}.`
      : `lazy's proxy has no credential "${r.credential}" for ${r.provider} (${r.host}, profile ${r.profile}): store it with lazy auth set ${r.credential}.`,
  credential_malformed: (r) =>
    `lazy's proxy will not send the stored credential "${r.credential}": it contains a line break. Store it again: lazy auth set ${r.credential}.`,
  body_too_large: (r) =>
    r.what === "cursor_exchange"
      ? `lazy's proxy refused a Cursor key exchange body over ${r.limit} bytes.`
      : `lazy's proxy refused a ${r.declared !== null ? `${r.declared}-byte` : "chunked"} request body: the limit is ${r.limit} bytes. Send a smaller request.`,
  plugin_failed: (r) => `lazy's proxy failed: request plugin ${r.plugin}: ${r.error}`,
  plugin_refused: (r) => `lazy's proxy refused ${r.method} ${r.path}: plugin ${r.plugin}: ${r.reason}`,
  plugin_body_too_large: (r) => `lazy's proxy failed: a request plugin made the body larger than ${r.limit} bytes`,
  model_refused: (r) =>
    `lazy's proxy refused the request: ${modelWhy(r)}; profile ${r.profile} allows only ${r.models.join(", ")}. To go on, ask for one of those, or add the model to models under [profiles.${r.profile}] in lazy.toml and run lazy trust.`,
  cursor_route_malformed: (r) =>
    `lazy's proxy got a malformed Cursor route (${r.segments} path segments; expected /_lazy/cursor/<placeholder>/<upstream path>).`,
  placeholder_on_host_route: () =>
    "lazy's proxy refused a lazy placeholder on the host-login Cursor route (/_lazy/cursor/-/): nothing is substituted there. A task's cursor-agent uses /_lazy/cursor/<its placeholder>/.",
  cursor_profile_mismatch: (r) =>
    `lazy's proxy refused this placeholder on the Cursor route: it belongs to profile ${r.profile}, which ${r.gone ? "is no longer in lazy.toml" : "is not a cursor-agent profile"}. Only a cursor-agent profile's placeholder works under /_lazy/cursor/.`,
  cursor_credential_none: (r) =>
    `lazy's proxy has no credential for Cursor: profile ${r.profile} sets credential = "none". Name the credential under [profiles.${r.profile}] in lazy.toml.`,
};

/** A refusal in words: the sentence the harness shows its user. */
export function words(r: Refusal): string {
  return (WORDS[r.code] as (r: Refusal) => string)(r);
}

/** The forwarding surface's verdict (surface.ts) as a refusal. */
export const pathRefusal = (v: Refused): Refusal => ({ code: "path_refused", method: v.method, path: v.path, allowed: v.allowed });

/** A refusal's HTTP status. */
export const statusOf = (r: Refusal): number => KIND[r.code][0];

/** A refusal's status and words, for the Cursor route's Connect shape (cursor.ts). */
export const said = (r: Refusal): [number, string] => [statusOf(r), words(r)];

/** A refusal as the wire's answer: its status, and its words in the wire's error shape. */
export function refusal(wire: Wire | "cursor", r: Refusal): Response {
  const [status, type] = KIND[r.code];
  // The OpenAI shape's code: lazy's own for a path the surface refuses (clients match on it).
  const code = r.code === "path_refused" ? "lazy_path_refused" : undefined;
  return errorResponse(wire, status, type, words(r), { [REFUSAL_HEADER]: r.code }, code);
}

export function errorResponse(
  wire: Wire | "cursor",
  status: number,
  type: string,
  message: string,
  extra: Record<string, string> = {},
  code?: string,
): Response {
  const body =
    wire === "openai"
      ? { error: { message, type, param: null, code: code ?? (type === "authentication_error" ? "invalid_api_key" : type) } }
      : { type: "error", error: { type, message } };
  return Response.json(body, { status, headers: { ...NO_RETRY, ...extra } });
}
