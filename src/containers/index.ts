/**
 * Everything lazy does with Docker, behind an interface of lazy's own (`Runtime`; dockerode
 * never leaves this folder): which engine, the project's network and its firewall against
 * link-local metadata addresses, the task image, and the labelled task containers a restarted
 * daemon finds again.
 */

export * as BaseImage from "./base-image";
export { BIN, caMount, containerEnvOf, linuxBinary, taskMounts } from "./container-spec";
export * as Engine from "./engine";
export * as Fence from "./fence";
export type { NetworkOptions } from "./firewall";
export * as HostNet from "./host-network";
export * as Image from "./image";
export { LABEL_IMAGE, LABEL_PROJECT, LABEL_TASK } from "./labels";
export type { Guard as LinkLocalGuard } from "./link-local";
export * as LinkLocal from "./link-local";
export type { Network } from "./network";
export { bindFor, type Gateway, imageDue, ProjectContainers, type ProjectDeps, taskImage } from "./project";
export { type ContainerInfo, type Mount, Runtime, type TaskContainerSpec } from "./runtime";
export * as Subnets from "./subnets";
export * as Tar from "./tar";
