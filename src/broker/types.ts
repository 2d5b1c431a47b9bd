/**
 * A brokered service as the broker uses it: lazy.toml's `[[service]]` with its shape's defaults
 * filled in (services.ts), and where its secret comes from.
 */
export type Shape = "github" | "gitlab" | "npm" | "pypi" | "oci" | "custom";

export type SourceSpec =
  | { kind: "credential"; name: string }
  | { kind: "command"; argv: string[]; ttlMs: number }
  | { kind: "app"; appId: string; key: string; permissions: Record<string, "read" | "write">; api: string };

export interface Service {
  /** "github", or the user's name. */
  name: string;
  shape: Shape;
  /** Patterns: "github.com", "*.githubusercontent.com", "npm.corp:8443" (no port: 443). */
  hosts: string[];
  auth: { kind: "bearer" } | { kind: "basic"; user: string } | { kind: "header"; name: string };
  source: SourceSpec;
  /** "owner/name"; git fetch and push only to these ([] = the project's origin repository). */
  repos: string[];
  /** Opt-in: then only refs/heads/lazy/<task> and refs/heads/lazy/<task>/… may be pushed. */
  push: boolean;
  /** npm: the scopes that resolve to this registry. */
  scopes: string[];
  /** The service's base URL as tools are told it. */
  url: string;
}
