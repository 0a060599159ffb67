export { type ApiDeps, type App, createApp } from "./app.ts";
export { MAX_BODY_BYTES } from "./update-request.ts";
