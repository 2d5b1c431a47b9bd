/**
 * A worker entry's URL. Compiled, the proxy's workers (thread/entry.ts, audit/writer.ts) are entry
 * points of the bundle, named from its root (src/); from source they sit beside this file.
 */
export function workerUrl(file: string): string {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return compiled ? `./proxy/${file}` : new URL(`./${file}`, import.meta.url).href;
}
