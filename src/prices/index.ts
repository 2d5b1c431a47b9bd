/**
 * Prices of models, in US dollars per million tokens: the providers' published list prices
 * (below, with where each came from), and those a project sets itself in lazy.toml ([prices]),
 * which come first. A model with neither has no price: lazy shows its tokens, says "no price
 * known for MODEL", and never makes one up. A request is priced by the model the upstream served
 * (else the one asked), never by a profile's config, and once, when its usage is written
 * (store/usage.ts keeps the dollars and the price used): a later change of either prices nothing
 * again.
 *
 * A leaf: the proxy's audit writer prices what it writes, spending/ reads it, the dashboard's
 * bundle takes it.
 */
export interface Price {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** Prices a project sets itself ([prices] in lazy.toml), by exact model name. */
export type Own = Readonly<Record<string, Price>>;

/** A price as lazy.toml writes it ([prices."MODEL"]): a cache rate left out is the input price. */
export interface Listed {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

/** [prices] as the writer and the readers take it. */
export function ownPrices(listed: Readonly<Record<string, Listed>>): Own {
  const own: Record<string, Price> = {};
  for (const [model, l] of Object.entries(listed))
    Object.defineProperty(own, model, {
      value: { input: l.input, output: l.output, cacheRead: l.cache_read ?? l.input, cacheWrite: l.cache_write ?? l.input },
      enumerable: true,
    });
  return own;
}

const p = (input: number, output: number, cacheRead: number, cacheWrite = input * 1.25): Price => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

/**
 * The list prices, checked 2026-12. Anthropic's: platform.claude.com/docs/en/about-claude/pricing
 * ("Model pricing": base input, 5-minute cache writes, cache hits, output); the same figures are
 * Claude Code 2.1's own cost table. OpenAI's: developers.openai.com/api/docs/pricing and each
 * model's page there (input, cached input, output; OpenAI bills no cache write). Claude Code 2.1 asks for claude-opus-4-8, claude-sonnet-4-6 and
 * claude-haiku-4-5 by default. Models whose published price could not be confirmed (Claude
 * Sonnet 5, Fable, Mythos) are left out on purpose: they show "no price known".
 */
export const PRICES: Readonly<Record<string, Price>> = {
  "claude-opus-4-8": p(5, 25, 0.5),
  "claude-opus-4-7": p(5, 25, 0.5),
  "claude-opus-4-6": p(5, 25, 0.5),
  "claude-opus-4-5": p(5, 25, 0.5),
  "claude-opus-4-1": p(15, 75, 1.5),
  "claude-opus-4": p(15, 75, 1.5),
  "claude-sonnet-4-6": p(3, 15, 0.3),
  "claude-sonnet-4-5": p(3, 15, 0.3),
  "claude-sonnet-4": p(3, 15, 0.3),
  "claude-haiku-4-5": p(1, 5, 0.1),
  "gpt-5": p(1.25, 10, 0.125, 1.25),
  "gpt-5-codex": p(1.25, 10, 0.125, 1.25),
  "gpt-5-mini": p(0.25, 2, 0.025, 0.25),
  "gpt-5-nano": p(0.05, 0.4, 0.005, 0.05),
};

const NONE: Own = {};

/**
 * The dearest rate of each kind in the table: what a dollar budget counts a model with no price
 * at (spending/budget.ts), so tokens of an unpriced model cannot run past it unseen. Shown costs
 * never use it ("no price known for MODEL" stays).
 */
export const DEAREST: Price = {
  input: Math.max(...Object.values(PRICES).map((x) => x.input)),
  output: Math.max(...Object.values(PRICES).map((x) => x.output)),
  cacheRead: Math.max(...Object.values(PRICES).map((x) => x.cacheRead)),
  cacheWrite: Math.max(...Object.values(PRICES).map((x) => x.cacheWrite)),
};

/**
 * A model's price. A project's own price ([prices]) by the exact name first. Then the table: the
 * exact name, or the name less one date suffix (claude-sonnet-4-5-20250929, a snapshot of the
 * same model at the same price), or a router's spelling of it (OpenRouter's
 * `anthropic/claude-opus-4.1`: that vendor prefix dropped, dots as dashes). Nothing else: a
 * name with any other suffix (claude-haiku-4-5-max, claude-haiku-4-5-20251001-x) is not the
 * model it starts with, and has no price.
 */
export function priceOf(model: string | undefined, own: Own = NONE): Price | null {
  if (!model) return null;
  if (Object.hasOwn(own, model)) return own[model]!;
  const known = (m: string) => (Object.hasOwn(PRICES, m) ? PRICES[m]! : null);
  const plain = model.replace(/-\d{8}$/, "");
  const routed = plain.replace(/^(anthropic|openai)\//, "").replace(/\./g, "-");
  return known(model) ?? known(plain) ?? known(routed);
}

/** A price as it is kept beside the dollars it gave: "input/output/cacheRead/cacheWrite" per million tokens. */
export const priceText = (price: Price) => `${price.input}/${price.output}/${price.cacheRead}/${price.cacheWrite}`;

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
