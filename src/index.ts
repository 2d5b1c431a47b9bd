/**
 * The entry of the one binary: CLI, daemon (`lazy daemon run`), proxy and storage.
 */
import { run } from "./cli";

const code = await run(process.argv.slice(2));
// The daemon's foreground command never returns; everything else exits with its code.
process.exit(code);
