/**
 * The built-in shapes of a brokered service: the hosts, the form the token takes, the base URL
 * tools are told and the placeholder's shape, so a common setup is a shape and a source. What
 * each service reads is its own documentation's: GitHub takes an installation token or PAT as
 * the basic-auth password of `x-access-token` for git over HTTPS and as a bearer token on its
 * API; GitLab a PAT as the password of any user (`oauth2`) or PRIVATE-TOKEN; npm a bearer token
 * (`_authToken` in .npmrc); PyPI-style indexes the password of `__token__`; registries basic
 * auth at their token endpoint.
 */
import type { Service, Shape } from "./types";

export type PlaceholderShape = "github" | "github-app" | "gitlab" | "npm" | "pypi" | "service";

interface Builtin {
  hosts: string[];
  auth: Service["auth"];
  /** The base URL; null: the first host's https:// origin. */
  url: string | null;
  placeholder: PlaceholderShape;
  /** Whether git's smart HTTP runs against it (a credential helper, the push rule). */
  git: boolean;
}

export const SHAPES: Record<Shape, Builtin> = {
  github: {
    hosts: ["github.com", "api.github.com", "codeload.github.com", "raw.githubusercontent.com"],
    auth: { kind: "basic", user: "x-access-token" },
    url: "https://github.com",
    placeholder: "github",
    git: true,
  },
  gitlab: { hosts: ["gitlab.com"], auth: { kind: "basic", user: "oauth2" }, url: "https://gitlab.com", placeholder: "gitlab", git: true },
  npm: { hosts: ["registry.npmjs.org"], auth: { kind: "bearer" }, url: "https://registry.npmjs.org/", placeholder: "npm", git: false },
  pypi: {
    hosts: ["upload.pypi.org"],
    auth: { kind: "basic", user: "__token__" },
    url: "https://upload.pypi.org/legacy/",
    placeholder: "pypi",
    git: false,
  },
  oci: { hosts: ["ghcr.io"], auth: { kind: "basic", user: "lazy" }, url: null, placeholder: "service", git: false },
  custom: { hosts: [], auth: { kind: "bearer" }, url: null, placeholder: "service", git: true },
};
