/**
 * Work put off to the end of the event loop's current turn, and run there together. The proxy
 * sends an upstream request or an agent's answer this way: many of them then leave in one
 * burst, and a peer on the same machine (a local model server, the agents themselves) wakes
 * once for the lot rather than once per message. It costs at most the rest of the turn; on an
 * idle proxy the turn holds that one message. bench/README.md has the figures.
 */
import * as Log from "./log";

const log = Log.create("turn");
let queue: (() => void)[] = [];

export function atEndOfTurn(fn: () => void): void {
  if (queue.push(fn) === 1) setImmediate(run);
}

/** Resolves at the end of this turn of the event loop. */
export function endOfTurn(): Promise<void> {
  return new Promise((resolve) => atEndOfTurn(resolve));
}

function run(): void {
  const q = queue;
  queue = [];
  // One failing callback must not strand the others (on a Worker, an uncaught error here would
  // also stop the thread): each is the caller's own, and reports its own errors.
  for (const fn of q)
    try {
      fn();
    } catch (e) {
      log.error(`a write put off to the end of the turn failed: ${(e as Error)?.message ?? String(e)}`);
    }
}
