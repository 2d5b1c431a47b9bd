/**
 * Prices of the models lazy's profiles name, in US dollars per million tokens, from the
 * providers' published price lists (checked 2026-12). A model not listed has no price: lazy
 * shows its tokens only, says "no price known for MODEL", and never makes one up. A request is
 * priced by the model the upstream served (else the one asked), never by a profile's config.
 */
export interface Price {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

const p = (input: number, output: number, cacheRead: number, cacheWrite = input * 1.25): Price => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

export const PRICES: Readonly<Record<string, Price>> = {
  "claude-opus-4-1": p(15, 75, 1.5),
  "claude-opus-4-5": p(5, 25, 0.5),
  "claude-sonnet-4-5": p(3, 15, 0.3),
  "claude-sonnet-4": p(3, 15, 0.3),
  "claude-haiku-4-5": p(1, 5, 0.1),
  "gpt-5": p(1.25, 10, 0.125, 1.25),
  "gpt-5-codex": p(1.25, 10, 0.125, 1.25),
  "gpt-5-mini": p(0.25, 2, 0.025, 0.25),
  "gpt-5-nano": p(0.05, 0.4, 0.005, 0.05),
};

/**
 * A model's price: exact name, or the name with a date suffix (claude-sonnet-4-5-20250929), or a
 * router's spelling of it (OpenRouter's `anthropic/claude-opus-4.1`: the vendor and dots dropped).
 */
export function priceOf(model: string | undefined): Price | null {
  if (!model) return null;
  const known = (m: string) => (Object.hasOwn(PRICES, m) ? PRICES[m]! : null);
  const plain = model.replace(/-\d{8}$/, "");
  const routed = plain.replace(/^(anthropic|openai)\//, "").replace(/\./g, "-");
  return known(model) ?? known(plain) ?? known(routed);
}

export interface Tokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** Dollars for these tokens at this price; null when the price is unknown. */
export function costOf(price: Price | null, t: Tokens): number | null {
  if (!price) return null;
  return (t.input * price.input + t.output * price.output + t.cacheRead * price.cacheRead + t.cacheWrite * price.cacheWrite) / 1e6;
}

/** What a budget counts as tokens: everything the model read or wrote. */
export const tokensOf = (t: Tokens) => t.input + t.output + t.cacheRead + t.cacheWrite;
