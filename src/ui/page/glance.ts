/**
 * At a glance: the summary bar above the table (docs/dashboard.md, "At a glance"). Counts of every
 * row (whatever the filters), each a toggle that filters the table to what it counted.
 */
import { type Bucket, countRows, UPDATE_KINDS } from "../summary.ts";
import { h, replace } from "./dom.ts";
import { localTime, rateLimitWords } from "./format.ts";
import { notify, state, subscribe } from "./store.ts";

export const summary = h("section", { class: "summary", "aria-label": "At a glance" });

const BUCKET_WORDS: Record<Bucket, string> = {
  major: "major",
  minor: "minor",
  patch: "patch",
  digest: "digest",
  tag: "tag",
  held: "held or pending",
  failed: "failed or rolled back",
};

subscribe(["data", "glance"], renderSummary);

/** "Everything is up to date" only when nothing failed either: the failures are counted beside it. */
function headline(updates: number, failed: number): string {
  if (updates > 0) return `${updates} ${updates === 1 ? "update" : "updates"} available`;
  return failed === 0 ? "Everything is up to date." : "No update available.";
}

function renderSummary(): void {
  const counts = countRows(state.rows);
  const toggle = (bucket: Bucket, count: number) =>
    h(
      "button",
      {
        type: "button",
        class: `count count-${bucket}`,
        "data-bucket": bucket,
        "aria-pressed": String(state.filters.bucket === bucket),
        disabled: count === 0 && state.filters.bucket !== bucket,
        onclick: () => ((state.filters.bucket = state.filters.bucket === bucket ? "" : bucket), notify("glance")),
      },
      h("strong", {}, String(count)),
      ` ${BUCKET_WORDS[bucket]}`,
    );
  const kinds = UPDATE_KINDS.filter((kind) => kind !== "tag" || counts.by_kind.tag > 0);
  const limits = (state.data?.rate_limits ?? []).map((limit) => ({ limit, ...rateLimitWords(limit) }));
  const hosts = state.peers.length ? [...new Set(state.rows.map((row) => row.host))] : [];
  replace(
    summary,
    h("p", { class: "total" }, headline(counts.updates, counts.failed)),
    h(
      "div",
      { class: "counts", role: "group", "aria-label": "Show only" },
      ...kinds.map((kind) => toggle(kind, counts.by_kind[kind])),
      toggle("held", counts.held),
      toggle("failed", counts.failed),
    ),
    hosts.length > 1 &&
      h(
        "div",
        { class: "counts hosts", role: "group", "aria-label": "Updates per host" },
        ...hosts.map((host) => {
          const pressed = state.filters.host === host;
          const choose = () => ((state.filters.host = pressed ? "" : host), notify("glance"));
          return h(
            "button",
            { type: "button", class: "count", "data-host": host, "aria-pressed": String(pressed), onclick: choose },
            h("strong", {}, String(countRows(state.rows.filter((row) => row.host === host)).updates)),
            ` on ${host}`,
          );
        }),
      ),
    limits.length > 0 &&
      h(
        "p",
        { class: "limits" },
        ...limits.map(({ limit, text, low }) =>
          h(
            "span",
            {
              class: low ? "limit low" : "limit",
              role: low ? "alert" : null,
              title: `${limit.remaining} left at ${localTime(limit.at)}`,
            },
            text,
          ),
        ),
      ),
  );
}
