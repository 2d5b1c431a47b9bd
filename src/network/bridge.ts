import { LazyError } from "../util/errors";
import * as Fence from "./fence";
import * as Firewall from "./firewall";
import * as LinkLocal from "./link-local";
import type { On } from "./on";
import * as Subnets from "./subnets";

export interface Network {
  name: string;
  gateway: string;
  /** Whether its containers can reach link-local metadata addresses, and why. */
  guard: LinkLocal.Guard;
  /** What else its containers can reach (fence.ts), and why. */
  fence: Fence.State;
}

interface Detail {
  Id: string;
  Options?: Record<string, string>;
  Containers?: Record<string, unknown>;
  IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
}

const nameOf = (project: string) => `lazy-${project}`;
const ipv4Gateway = (d: Detail) => d.IPAM?.Config?.find((c) => c.Gateway && !c.Gateway.includes(":"))?.Gateway;

async function find(on: On, name: string): Promise<Detail | undefined> {
  const net = (await on.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
  return net ? ((await on.docker.getNetwork(net.Id).inspect()) as Detail) : undefined;
}

/**
 * The project's network, made if missing; on native Linux its gateway is where the proxy
 * listens for containers. Each call also (re)applies the firewall on its bridge.
 */
export async function ensure(on: On, project: string, opts: Firewall.NetworkOptions): Promise<Network> {
  const name = nameOf(project);
  let detail = await find(on, name);
  if (!detail) {
    await create(on, name, project);
    detail = await find(on, name);
  }
  const gateway = detail && ipv4Gateway(detail);
  if (!detail || !gateway)
    throw new LazyError(
      "launch_refused",
      `Docker network ${name} has no IPv4 gateway; remove it (docker network rm ${name}) and try again.`,
    );
  const { guard, fence } = await Firewall.apply({ ...on, project, bridge: LinkLocal.bridgeOf(detail), gateway, opts });
  return { name, gateway, guard, fence };
}

/**
 * A small subnet of lazy's own range, so Docker's default pools are never what runs out
 * (subnets.ts); Docker's own pool only when that range is full, its refusal worded.
 */
async function create(on: On, name: string, project: string): Promise<void> {
  const make = (ipam?: { subnet: string; gateway: string }) =>
    on.docker.createNetwork({
      Name: name,
      Driver: "bridge",
      Labels: { [on.projectLabel]: project },
      CheckDuplicate: true,
      ...(ipam ? { IPAM: { Driver: "default", Config: [{ Subnet: ipam.subnet, Gateway: ipam.gateway }] } } : {}),
    });
  const taken = ((await on.docker.listNetworks()) as { IPAM?: { Config?: { Subnet?: string }[] | null } }[]).flatMap((n) =>
    (n.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])),
  );
  // A few tries: another project's daemon may take the same block between the list and the create.
  for (const ipam of Subnets.candidates(project, taken).slice(0, 8)) {
    try {
      await make(ipam);
      return;
    } catch (e) {
      const m = (e as Error).message;
      if (/already exists/i.test(m)) return; // a racing command of this project made it
      if (!Subnets.OVERLAP.test(m)) throw e;
    }
  }
  try {
    await make();
  } catch (e) {
    const m = (e as Error).message;
    if (/already exists/i.test(m)) return;
    if (Subnets.NO_POOL.test(m)) throw Subnets.exhausted(name, m.replace(/^\(HTTP code \d+\)[^-]*- /, "").trim());
    throw e;
  }
}

/** Remove the project's network once no container uses it; the gateway it had, if it went. */
export async function remove(on: On, project: string, opts: Firewall.NetworkOptions): Promise<string | undefined> {
  const detail = await find(on, nameOf(project));
  if (!detail || Object.keys(detail.Containers ?? {}).length) return undefined;
  await on.docker.getNetwork(detail.Id).remove();
  // Its bridge is gone; so goes the jump that named it.
  const bridge = LinkLocal.bridgeOf(detail);
  if (on.kind === "native" && LinkLocal.validBridge(bridge)) {
    const r = await Firewall.run(on, project, LinkLocal.removeScript(bridge, Fence.removeLines()), opts.helperImage);
    if ("code" in r && r.code !== 0)
      on.log.warn(`could not remove the ${LinkLocal.CHAIN} jump for ${bridge}: ${LinkLocal.failure(r.code, r.output)}`);
  }
  return ipv4Gateway(detail);
}
