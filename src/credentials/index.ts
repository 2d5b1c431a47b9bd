/**
 * Credentials: the real model keys and tokens the proxy swaps in for a task's placeholder.
 * They live with the daemon only: in the macOS Keychain, the Linux Secret Service, or a 0600
 * file store when neither works, with the daemon's environment as a fallback for the standard
 * names. The store keeps every value in memory so the proxy never waits on a backend, and polls
 * the backend so a change made outside lazy takes effect within seconds.
 *
 * Never put a value into a log line, an error, a child's argv or any file but the backend.
 */

export { fromClaudeJson } from "./expiry";
export { type ExpiryNotice, ExpiryWarnings, expiryMessage, WARN_MS } from "./expiry-warnings";
export {
  BACKENDS,
  type Backend,
  CredentialInfo,
  CredentialKind,
  kindOf,
  last4,
  STANDARD,
  setWarnings,
  validName,
  validValue,
} from "./kinds";
export { encodePem, isStoredKey, keyMaterial, PEM_MAX_BYTES, privateKeyOf } from "./private-key";
export { CredentialStore, type OpenOptions, type Resolved } from "./store";
