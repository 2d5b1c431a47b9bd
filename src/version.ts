import pkg from "../package.json" with { type: "json" };

/** Set only by `bun build.ts --as-version V` (a test's second build); never in a release. */
declare const LAZY_BUILD_VERSION: string | undefined;
/** Baked in by build.ts: the git commit the binary was built from (`-dirty` with uncommitted changes), or "unknown". */
declare const LAZY_BUILD_COMMIT: string | undefined;
/** Baked in by build.ts: when the binary was built (UTC, ISO 8601). */
declare const LAZY_BUILD_DATE: string | undefined;

/** The version this binary was built from; `lazy --version` prints it. */
export const VERSION: string = typeof LAZY_BUILD_VERSION === "string" ? LAZY_BUILD_VERSION : pkg.version;
/** The commit it was built from: "unknown" when built outside a git checkout of lazy, or run from source. */
export const COMMIT: string = typeof LAZY_BUILD_COMMIT === "string" && LAZY_BUILD_COMMIT ? LAZY_BUILD_COMMIT : "unknown";
/** When it was built: "unknown" when run from source. */
export const BUILT: string = typeof LAZY_BUILD_DATE === "string" && LAZY_BUILD_DATE ? LAZY_BUILD_DATE : "unknown";

/** What `lazy version` says: `lazy 0.1.0 (commit 1a2b3c4d5e6f, built 2026-12-06T05:00:00Z)`. */
export const versionLine = (): string => `lazy ${VERSION} (commit ${COMMIT}, built ${BUILT})`;
