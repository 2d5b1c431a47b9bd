/**
 * Two small things about URLs that several subsystems need, written once: the request target
 * (path and query) cut out of a URL, and a host put in a URL's authority (an IPv6 address needs
 * brackets there).
 */

/**
 * The request target (path and query) of a URL. Bun gives `req.url` absolute when the request
 * names a host, and the bare target when it does not (HTTP/1.0 without Host, absolute-form or
 * not): cutting after a "//" that is not there would drop the first path segment. "/" when the
 * URL has no path.
 */
export function pathOf(url: string): string {
  if (url.charCodeAt(0) === 47 /* "/" */) return url;
  const slash = url.indexOf("/", url.indexOf("//") + 2);
  return slash === -1 ? "/" : url.slice(slash);
}

/** A host as written in a URL's authority: an IPv6 address in brackets, anything else as is. */
export function urlHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}
