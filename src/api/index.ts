export { type ApiDeps, type App, createApp, listen } from "./app.ts";
export { type Api, serveApi } from "./server.ts";
export { MAX_BODY_BYTES } from "./update-request.ts";
