/**
 * lazy.toml: the schema (type, validator, docs), the loader that reports every problem with
 * its line and column, the reference read off the schema (docs/config.md) and the starter
 * `lazy init` writes from it.
 */

export { type AllowEntry, allows, DEFAULT_ALLOW, hostOf, parseAllow } from "./allow";
export * as BuildFiles from "./build-files";
export { autoMaxRunning, bytesOf, maxRunning, type Resolved as ResolvedLimits, resolveLimits } from "./limits";
export { FILE, formatProblem, type Loaded, load, loadText, type Problem, readConfigText } from "./load";
export { defaultProfile, type Harness, profileNames, type ResolvedProfile, resolveProfile, usedHarnesses } from "./profiles";
export * as Reference from "./reference";
export * from "./schema";
export { durationMs, SERVICE_SHAPES, type Service } from "./services";
export { starter } from "./starter";
export * as Trust from "./trust";
export { type SecretUrl, secretPart, secretUrls } from "./url-secrets";
