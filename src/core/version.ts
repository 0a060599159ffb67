import pkg from "../../package.json" with { type: "json" };

// build.ts defines SVC_BUILD_COMMIT; from source it is absent.
declare const SVC_BUILD_COMMIT: string | undefined;

const commit = typeof SVC_BUILD_COMMIT === "string" && SVC_BUILD_COMMIT ? SVC_BUILD_COMMIT : "";

export const VERSION: string = commit ? `${pkg.version}+${commit}` : pkg.version;
