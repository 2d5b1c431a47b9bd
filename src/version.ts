import pkg from "../package.json" with { type: "json" };

/** Set only by `bun build.ts --as-version V` (a test's second build); never in a release. */
declare const LAZY_BUILD_VERSION: string | undefined;

/** The version this binary was built from; `lazy --version` prints it. */
export const VERSION: string = typeof LAZY_BUILD_VERSION === "string" ? LAZY_BUILD_VERSION : pkg.version;
