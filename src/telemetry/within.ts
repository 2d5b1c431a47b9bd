/** `p` awaited for at most `ms` (its failure ignored): the bound of the daemon's stop on the export. */
export async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: Timer | undefined;
  await Promise.race([p.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  clearTimeout(timer);
}
