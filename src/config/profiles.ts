/**
 * Agent profiles: the four built-in ones (claude, codex, cursor, pi) exist without any
 * config; a [profiles.NAME] table adds one or adjusts a built-in.
 */

import { LazyError } from "../util/errors";
import { type Config, HARNESSES, type Profile } from "./schema";

export type Harness = (typeof HARNESSES)[number];
export interface ResolvedProfile {
  name: string;
  harness: Harness;
  model?: string;
  endpoint?: string;
  wire: "anthropic" | "openai" | "cursor";
  credential?: string;
  /** The only models its requests may ask for ([profiles.NAME] models); undefined: any. */
  models?: readonly string[];
}

const defaultWire = (h: Harness) => (h === "codex" ? "openai" : h === "cursor" ? "cursor" : "anthropic");

export function profileNames(config: Config): string[] {
  return [...new Set([...HARNESSES, ...Object.keys(config.profiles)])].sort();
}

export function resolveProfile(config: Config, name: string): ResolvedProfile {
  const p: Profile | undefined = config.profiles[name];
  const builtin = (HARNESSES as readonly string[]).includes(name);
  if (!p && !builtin)
    throw new LazyError(
      "invalid_input",
      `No profile "${name}": use one of ${profileNames(config).join(", ")}, or add [profiles.${name}] to lazy.toml.`,
    );
  const harness = (p?.harness ?? name) as Harness;
  return {
    name,
    harness,
    model: p?.model,
    endpoint: p?.endpoint,
    wire: p?.wire ?? defaultWire(harness),
    credential: p?.credential,
    models: p?.models,
  };
}

export const defaultProfile = (config: Config): string => config.models.roles.agent;

/**
 * The harnesses this project's profiles use: the default profile's, the builder role's, and
 * every [profiles.NAME] table's, plus `also` (a launch on a built-in profile lazy.toml does not
 * name). lazy's default image installs these and no other (containers/image.ts).
 */
export function usedHarnesses(config: Config, also: readonly Harness[] = []): Harness[] {
  const names = [defaultProfile(config), config.models.roles.builder, ...Object.keys(config.profiles)].filter(
    (n): n is string => typeof n === "string",
  );
  const used = new Set<Harness>(also);
  for (const n of names) {
    try {
      used.add(resolveProfile(config, n).harness);
    } catch {}
  }
  return HARNESSES.filter((h) => used.has(h));
}
