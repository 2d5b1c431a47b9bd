/**
 * The broker's shapes: one brokered service as lazy.toml resolves it. Every part of the broker
 * (the terminator, the sources, the git scoping) codes against these.
 */
export type Shape = "github" | "gitlab" | "npm" | "pypi" | "oci" | "custom";
export type SourceSpec =
  | { kind: "credential"; name: string } // lazy auth set NAME
  | { kind: "command"; argv: string[]; ttlMs: number } // run by the daemon on the host, no shell
  | {
      kind: "app";
      appId: string;
      key: string /* credential name holding the PEM */;
      permissions: Record<string, "read" | "write">;
      api: string /* e.g. https://api.github.com */;
    };
export interface Service {
  name: string; // "github", or the user's name
  shape: Shape;
  hosts: string[]; // patterns: "github.com", "*.githubusercontent.com", "npm.corp:8443" (no port = 443)
  auth: { kind: "bearer" } | { kind: "basic"; user: string } | { kind: "header"; name: string };
  source: SourceSpec;
  repos: string[]; // "owner/name"; git fetch/push only to these ([] = the project's origin repo)
  push: boolean; // opt-in; when true only refs/heads/lazy/<task> and refs/heads/lazy/<task>/… may be pushed
  scopes: string[]; // npm: "@acme" scopes that resolve to this registry
  url: string; // the service's base URL as tools are told it ("https://github.com", "https://npm.corp:8443/", "https://pypi.corp/simple/")
}
