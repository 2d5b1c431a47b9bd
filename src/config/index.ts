/**
 * lazy.toml: the schema (type, validator, docs), the loader that reports every problem with
 * its line and column, and the starter `lazy init` writes.
 */
export * from "./schema";
export { resolveLimits, bytesOf, type Resolved as ResolvedLimits } from "./limits";
export { load, loadText, readConfigText, formatProblem, FILE, type Loaded, type Problem } from "./load";
export { starter } from "./starter";
export { resolveProfile, profileNames, defaultProfile, type ResolvedProfile, type Harness } from "./profiles";
export * as Trust from "./trust";
export { secretUrls, secretPart, type SecretUrl } from "./url-secrets";
export { parseAllow, allows, hostOf, DEFAULT_ALLOW, type AllowEntry } from "./allow";
