/**
 * Credentials: the real model keys and tokens the proxy swaps in for a task's placeholder.
 * They live with the daemon only: in the macOS Keychain, the Linux Secret Service, or a 0600
 * file store when neither works, with the daemon's environment as a fallback for the standard
 * names. The store keeps every value in memory so the proxy never waits on a backend, and polls
 * the backend so a change made outside lazy takes effect within seconds.
 *
 * Never put a value into a log line, an error, a child's argv or any file but the backend.
 */
export { CredentialStore, type OpenOptions, type Resolved } from "./store";
export { fromClaudeJson } from "./expiry";
export { ExpiryWarnings, expiryMessage, WARN_MS, type ExpiryNotice } from "./expiry-warnings";
export {
  type Backend,
  BACKENDS,
  CredentialInfo,
  CredentialKind,
  STANDARD,
  kindOf,
  last4,
  setWarnings,
  validName,
  validValue,
} from "./kinds";
