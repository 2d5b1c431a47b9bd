/**
 * What the proxy's listeners never serve: the daemon's own API lives on another listener, and a
 * path under one of its roots is answered 404 here, token or not. The daemon tells the proxy its
 * API's roots (ModelProxy.notServed), so the list lives once.
 */

/** Is the path (with its query) one of these roots, or below one? */
export function under(path: string, roots: readonly string[]): boolean {
  for (const r of roots)
    if (path.startsWith(r) && (path.length === r.length || path[r.length] === "/" || path[r.length] === "?")) return true;
  return false;
}
