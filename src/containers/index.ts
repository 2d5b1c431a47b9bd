/**
 * Everything lazy does with Docker, behind an interface of lazy's own (`Runtime`; dockerode
 * never leaves this folder): which engine, the project's network and its firewall against
 * link-local metadata addresses, the task image, and the labelled task containers a restarted
 * daemon finds again.
 */
export * as Engine from "./engine";
export * as Image from "./image";
export * as Tar from "./tar";
export { Runtime, type Mount, type TaskContainerSpec, type ContainerInfo } from "./runtime";
export { LABEL_PROJECT, LABEL_TASK } from "./labels";
export type { Network } from "./network";
export type { NetworkOptions } from "./firewall";
export * as LinkLocal from "./link-local";
export type { Guard as LinkLocalGuard } from "./link-local";
export * as Fence from "./fence";
export * as Subnets from "./subnets";
export * as HostNet from "./host-network";
export * as BaseImage from "./base-image";
export { ProjectContainers, bindFor, type Gateway, type ProjectDeps } from "./project";
export { BIN, containerEnv, containerEnvOf, taskMounts, linuxBinary } from "./container-spec";
