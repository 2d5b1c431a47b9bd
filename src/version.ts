import pkg from "../package.json" with { type: "json" };

/** The version this binary was built from; `lazy --version` prints it. */
export const VERSION: string = pkg.version;
