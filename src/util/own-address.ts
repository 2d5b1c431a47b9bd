/**
 * Whether an address is this host's own: loopback, unspecified, or one a socket can be bound to
 * here (every interface's, each project's gateway, a bridge with no container yet: Node's
 * interface list leaves out interfaces that are not up and running). With
 * net.ipv4.ip_nonlocal_bind set every address binds: all are treated as the host's. The egress
 * proxy keeps containers from these; the model proxy never sends its upstream requests for them
 * through the host's proxy (proxy/upstream/way.ts).
 */
export function isHostOwn(a: string): boolean {
  if (/^127\./.test(a) || a === "0.0.0.0" || a === "::1" || a === "::" || /^::ffff:127\./i.test(a)) return true;
  try {
    Bun.listen({ hostname: a, port: 0, socket: { data() {} } }).stop(true);
    return true;
  } catch {
    return false;
  }
}
