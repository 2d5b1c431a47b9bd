/**
 * Checks of [[proxy.fallback]] that the schema alone cannot make, each at its line:col: a
 * fallback backs the primary upstream (Anthropic's wire), so it must speak that wire; and a
 * short rate limit is never a reason to reroute (it clears in seconds; `quota` is the one that
 * does not). The rerouting itself is proxy/request/fallback.ts.
 */
export function fallbackProblems(raw: unknown): { path: (string | number)[]; message: string }[] {
  const list = (raw as { proxy?: { fallback?: unknown } } | undefined)?.proxy?.fallback;
  if (!Array.isArray(list)) return [];
  const out: { path: (string | number)[]; message: string }[] = [];
  list.forEach((f: unknown, i) => {
    if (!f || typeof f !== "object") return;
    const { wire, on } = f as { wire?: unknown; on?: unknown };
    if (wire !== undefined && wire !== "anthropic")
      out.push({
        path: ["proxy", "fallback", i, "wire"],
        message: `expected "anthropic": a fallback backs the primary upstream, which speaks the Anthropic wire; an endpoint speaking ${JSON.stringify(wire)} cannot answer its requests`,
      });
    if (Array.isArray(on) && on.includes("429"))
      out.push({
        path: ["proxy", "fallback", i, "on"],
        message: 'a short rate limit ("429") is never rerouted: it clears in seconds; list "quota" for a used-up window or balance',
      });
  });
  return out;
}
