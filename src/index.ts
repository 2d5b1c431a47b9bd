/**
 * The entry of the one binary: CLI, daemon (`lazy daemon run`), proxy and storage.
 */
import { run } from "./cli";

const code = await run(process.argv.slice(2));
// The daemon's foreground command never returns; everything else exits with its code. The CLI
// writes synchronously (cli/out.ts), so nothing it printed is still queued here.
process.exit(code);
