/**
 * The entry of the one binary: CLI, daemon (`lazy daemon run`), proxy and storage.
 */
import { run } from "./cli";

const code = await run(process.argv.slice(2));
// Output to a pipe is written asynchronously: exiting at once cut a `--json` answer over 64 KiB
// short (a task with 10,000 events). Ending stdout waits until the reader has it all.
await Promise.race([new Promise((resolve) => process.stdout.end(() => resolve(null))), Bun.sleep(600_000)]);
// The daemon's foreground command never returns; everything else exits with its code.
process.exit(code);
