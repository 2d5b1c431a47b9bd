/**
 * Whether the engine has an image, or could pull it, asked before the first build (lazy
 * doctor): the registry is asked for the image's manifest (Docker's distribution endpoint),
 * nothing is downloaded. A base that cannot be pulled is the most common first-build failure
 * behind a company network.
 */
import * as Engine from "./engine";

export type Presence = { state: "present" } | { state: "pullable" } | { state: "unreachable"; error: string };

export async function presence(ep: Engine.Endpoint, name: string, timeoutMs = 10_000): Promise<Presence> {
  const d = await Engine.client(ep);
  const bounded = <T>(p: Promise<T>) => Engine.bounded(p, timeoutMs);
  try {
    await bounded(d.getImage(name).inspect());
    return { state: "present" };
  } catch {}
  try {
    await bounded(d.getImage(name).distribution());
    return { state: "pullable" };
  } catch (e) {
    return { state: "unreachable", error: ((e as { json?: { message?: string } }).json?.message ?? (e as Error).message).trim() };
  }
}
