/**
 * A worker entry's URL. Compiled, the workers (proxy/thread/entry.ts, proxy/audit/writer.ts)
 * are entry points of the bundle, named from its root (src/); from source they are files under
 * src/, found from this file's place in it (src/util/).
 */
export function workerUrl(file: string): string {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  return compiled ? `./${file}` : new URL(`../${file}`, import.meta.url).href;
}
