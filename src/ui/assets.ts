/**
 * The dashboard's files (docs/dashboard.md): the page, its script and its style, bundled by Bun
 * from ./page/index.html. A compiled svc carries them inside the binary (Bun bundles an HTML
 * import at build time and lists the outputs in `files`); run from source, the same bundle is
 * built in memory on first use. Each file is kept once, raw and gzipped, with a content-hash ETag:
 * the script and the style have the hash in their name and are cached for good, the page itself
 * is revalidated (it names the current ones).
 */
import type { HTMLBundle } from "bun";
import page from "./page/index.html";

export interface Asset {
  /** the URL path it is served at: "/" for the page */
  path: string;
  contentType: string;
  raw: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
  /** the name carries the content hash: cache it for good */
  immutable: boolean;
}

/**
 * What the page may load, and from where: its own scripts and styles, and requests to its own
 * origin; nothing inline, nothing from another origin, no frame around it.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface BuiltFile {
  name: string;
  bytes: Uint8Array<ArrayBuffer>;
}

let loaded: Promise<Map<string, Asset>> | undefined;

/** Every asset by URL path, built or read once. */
export function uiAssets(): Promise<Map<string, Asset>> {
  loaded ??= builtFiles().then(toAssets);
  // nothing lost: the failure reaches the caller through `loaded` itself; this only lets the next call build again
  loaded.catch(() => (loaded = undefined));
  return loaded;
}

async function builtFiles(): Promise<BuiltFile[]> {
  const bundle = page as HTMLBundle;
  if (bundle.files?.length) {
    // compiled: the outputs are embedded in the binary ($bunfs)
    return Promise.all(
      bundle.files.map(async (file) => ({ name: baseName(file.path), bytes: await Bun.file(file.path).bytes() })),
    );
  }
  const result = await Bun.build({
    entrypoints: [new URL("./page/index.html", import.meta.url).pathname],
    minify: true,
    target: "browser",
  });
  if (!result.success) throw new Error(`the dashboard could not be built: ${result.logs.map(String).join("; ")}`);
  return Promise.all(
    result.outputs.map(async (output) => ({
      name: baseName(output.path),
      bytes: new Uint8Array(await output.arrayBuffer()),
    })),
  );
}

const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1);

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

function toAssets(files: BuiltFile[]): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of files) {
    const extension = file.name.slice(file.name.lastIndexOf(".") + 1);
    const isPage = extension === "html";
    const path = isPage ? "/" : `/${file.name}`;
    assets.set(path, {
      path,
      contentType: CONTENT_TYPES[extension] ?? "application/octet-stream",
      raw: file.bytes,
      gzip: Bun.gzipSync(file.bytes, { level: 9 }),
      etag: `"${Bun.hash(file.bytes).toString(36)}"`,
      immutable: !isPage,
    });
  }
  if (!assets.has("/")) throw new Error("the dashboard bundle has no page");
  return assets;
}

/** The response for one asset: gzipped when the client takes it, 304 when its copy is current. */
export function assetResponse(asset: Asset, request: Request): Response {
  const headers: Record<string, string> = {
    "content-type": asset.contentType,
    etag: asset.etag,
    "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
    vary: "accept-encoding",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  if (asset.path === "/") headers["content-security-policy"] = CONTENT_SECURITY_POLICY;
  if (request.headers.get("if-none-match") === asset.etag) return new Response(null, { status: 304, headers });
  const gzip = /\bgzip\b/i.test(request.headers.get("accept-encoding") ?? "");
  if (gzip) headers["content-encoding"] = "gzip";
  return new Response(gzip ? asset.gzip : asset.raw, { headers });
}
