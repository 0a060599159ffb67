export { type ApiDeps, type App, createApp } from "./app.ts";
export type { AccessFields, AccessLog } from "./access.ts";
export { MAX_BODY_BYTES } from "./update-request.ts";
