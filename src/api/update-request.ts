/**
 * Turns a POST /v1/update request into an UpdateFilter, applying the rules of docs/api.md in
 * their order: content type (415), size (413), then body and filter parsing (400). The body is
 * read here from the raw Request, with a cap, instead of by Elysia's parser: Elysia never
 * answers 415 and turns parser failures into its own statuses.
 */
import { readBounded } from "../core/bounded.ts";
import { SvcError } from "../core/errors.ts";
import type { UpdateFilter } from "../updater/types.ts";

export const MAX_BODY_BYTES = 64 * 1024;

const FILTER_FIELDS = ["container", "image", "stack"] as const;
type BodyKind = "json" | "form";
/** What a request gave for each field it may carry: the values, split and trimmed. */
type Fields<F extends string> = Partial<Record<F, string[]>>;

const badRequest = (message: string) => new SvcError("bad_request", message);

function bodyKindOf(contentType: string | null): BodyKind | null {
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase();
  if (mediaType === "application/json") return "json";
  if (mediaType === "application/x-www-form-urlencoded") return "form";
  return null;
}

/**
 * Splits comma-separated values, trims them and drops empty pieces. A field that is present
 * but leaves nothing (`container=`, `container=,`, `[]`) is a mistake, not "no filter".
 */
function splitValues(field: string, values: readonly string[]): string[] {
  const items = values
    .flatMap((value) => value.split(","))
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw badRequest(`filter "${field}" is empty`);
  return items;
}

/**
 * Query strings and form bodies: a filter is a comma-separated string. A repeated key
 * (`?container=a&container=b`) adds to the list, as Watchtower's API does.
 */
function fieldsFromParams<F extends string>(params: URLSearchParams, where: string, fields: readonly F[]): Fields<F> {
  const raw: Fields<F> = {};
  for (const [key, value] of params) {
    if (!(fields as readonly string[]).includes(key)) throw badRequest(`unknown ${where} parameter "${truncate(key)}"`);
    (raw[key as F] ??= []).push(value);
  }
  const out: Fields<F> = {};
  for (const field of fields) {
    const values = raw[field];
    if (values) out[field] = splitValues(field, values);
  }
  return out;
}

/** JSON bodies: an object whose fields are a comma-separated string or an array of strings. */
function fieldsFromJson<F extends string>(text: string, fields: readonly F[]): Fields<F> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("the body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("the JSON body must be an object");
  }
  const out: Fields<F> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(fields as readonly string[]).includes(key)) throw badRequest(`unknown field "${truncate(key)}"`);
    if (typeof value === "string") out[key as F] = splitValues(key, [value]);
    else if (Array.isArray(value) && value.every((item) => typeof item === "string"))
      out[key as F] = splitValues(key, value);
    else throw badRequest(`field "${key}" must be a string or an array of strings`);
  }
  return out;
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw badRequest("the body is not valid UTF-8");
  }
}

/** Keeps echoed user input short in error messages. */
function truncate(text: string, max = 64): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/** Throws an SvcError (unsupported_media_type, payload_too_large, bad_request) or gives the filter. */
export function parseUpdateRequest(request: Request, query: URLSearchParams): Promise<UpdateFilter> {
  return parseRequestFields(request, query, FILTER_FIELDS);
}

/**
 * The fields a request gives, from its query string and its body (JSON or form), under the same
 * rules for every endpoint that takes some: content type (415), size (413), then parsing (400).
 */
export async function parseRequestFields<F extends string>(
  request: Request,
  query: URLSearchParams,
  fields: readonly F[],
): Promise<Fields<F>> {
  const kind = bodyKindOf(request.headers.get("content-type"));
  const body = await readBounded(request, MAX_BODY_BYTES);
  const empty = body.bytes.byteLength === 0 && !body.overCap;
  if (!empty && kind === null) {
    throw new SvcError(
      "unsupported_media_type",
      "unsupported content type: send application/json or application/x-www-form-urlencoded, or no body",
    );
  }
  if (body.overCap) throw new SvcError("payload_too_large", `the request body exceeds ${MAX_BODY_BYTES / 1024} KiB`);

  const fromQuery = fieldsFromParams(query, "query", fields);
  if (empty) return fromQuery;
  const text = decodeUtf8(body.bytes);
  const fromBody =
    kind === "json" ? fieldsFromJson(text, fields) : fieldsFromParams(new URLSearchParams(text), "form", fields);
  for (const field of fields) {
    if (fromQuery[field] && fromBody[field])
      throw badRequest(`filter "${field}" is given both in the query string and in the body`);
  }
  return { ...fromQuery, ...fromBody };
}
