/** The History section: the kept cycles' reports (GET /v1/history), loaded anew after each full check. */
import { ApiError, api, type SessionSummary } from "./api.ts";
import { h, replace } from "./dom.ts";
import { fromNow, localTime, messageOf, outcomeWords } from "./format.ts";
import { subscribe } from "./store.ts";

export const history = h("ol", { class: "history" });

subscribe(["checked"], () => void loadHistory());

async function loadHistory(): Promise<void> {
  try {
    const { reports } = await api.history();
    replace(
      history,
      ...(reports.length
        ? reports.map(sessionItem)
        : [h("li", { class: "muted" }, "No cycle has run since svc started (or since the history was kept).")]),
    );
  } catch (failure) {
    if (!(failure instanceof ApiError && failure.status === 401))
      replace(history, h("li", { class: "error" }, messageOf(failure)));
  }
}

const COUNTED = ["updated", "failed", "rolled_back", "stale", "held", "skipped"] as const;

function sessionItem(report: SessionSummary): HTMLLIElement {
  const counted = COUNTED.filter((key) => report.counts[key] > 0).map(
    (key) => `${report.counts[key]} ${key.replace("_", " ")}`,
  );
  const outcome = counted.length ? counted.join(", ") : `${report.counts.scanned} checked, nothing newer`;
  return h(
    "li",
    {},
    h("span", { class: "when", title: localTime(report.finished_at) }, fromNow(report.finished_at)),
    ` · ${report.trigger} · ${outcome}`,
    report.containers.length > 0 &&
      h(
        "ul",
        {},
        ...report.containers.map((c) =>
          h("li", { title: c.reason ?? "" }, h("span", { class: "name" }, c.name), `: ${outcomeWords(c)}`),
        ),
      ),
  );
}
