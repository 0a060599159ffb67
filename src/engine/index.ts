/**
 * The engine room: talking to the Docker engine and recreating containers faithfully.
 * The updater depends on the Engine port (port.ts); createDockerEngine gives the real one.
 */
export type * from "./port.ts";
export type { Swarm, SwarmState, ServiceSummary, ServiceUpdateStatus, ServiceUpdateState } from "./swarm.ts";
export { isOutOfSequence, taskServiceOf, TASK_LABELS } from "./swarm.ts";
export { createDockerEngine, DockerEngine, type EngineTimeouts, RESPONSE_TIMEOUT_MS, NEGOTIATION_TIMEOUT_MS, splitReference, platformString } from "./docker.ts";
export { replacementSpec, isGeneratedHostname, userMacAddress, compareApiVersions, MULTI_NETWORK_CREATE_API } from "./clone.ts";
export type { ReplacementOptions, ReplacementSpec, EndpointSpec } from "./clone.ts";
export { parseDockerHost, tlsMaterial, normalizeApiVersion, CLIENT_MAX_API_VERSION, CLIENT_MIN_API_VERSION } from "./connection.ts";
export type { DockerConfig, Endpoint, TlsMaterial } from "./connection.ts";
export { demultiplexLogs, lastLines } from "./logs.ts";
export { ownContainerId } from "./self.ts";
