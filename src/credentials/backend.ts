/**
 * The contract every place a credential can live fulfils. The store keeps the values in memory
 * and asks its backend only on set, remove and refresh, never per proxied request.
 */
import type { Backend } from "./kinds";

export interface Stored {
  value: string;
  /** ISO time lazy stored it; null for a value found in the OS store that lazy never indexed. */
  setAt: string | null;
}

export interface BackendImpl {
  readonly kind: Backend;
  /** Where the values live, for notes and error messages ("the file store at …"). */
  readonly where: string;
  /** Everything stored now, read fresh (changes made outside lazy included). */
  load(): Promise<Map<string, Stored>>;
  /** Store or replace one value; resolves once it is durable. */
  set(name: string, value: string): Promise<Stored>;
  /** True when something was removed. */
  remove(name: string): Promise<boolean>;
}

/** Scrub a value out of a message from a lower layer before it can reach an error or a log. */
export function scrub(message: string, value: string | undefined): string {
  return value ? message.split(value).join("<redacted>") : message;
}
