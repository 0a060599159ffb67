/** The buttons above the table that update several rows: the selected ones, or every stale one shown. */
import { updateContainers } from "./actions.ts";
import { h, replace } from "./dom.ts";
import { state, subscribe, updatableNow, visibleRows } from "./store.ts";

export const bulk = h("div", { class: "bulk", role: "group", "aria-label": "Update several containers" });

subscribe(["data", "filters", "glance", "acting", "selection"], renderBulk);

function renderBulk(): void {
  if (!state.rows.some((row) => row.canAct)) return void replace(bulk);
  // what the filters show: with the host filter, everything stale on that host
  const stale = visibleRows().filter(updatableNow);
  const chosen = state.rows.filter((row) => state.selected.has(row.key));
  const where = state.filters.host ? ` on ${state.filters.host}` : "";
  replace(
    bulk,
    h(
      "button",
      { type: "button", disabled: chosen.length === 0 || state.acting, onclick: () => void updateContainers(chosen) },
      `Update selected (${chosen.length})`,
    ),
    h(
      "button",
      {
        type: "button",
        disabled: stale.length === 0 || state.acting,
        onclick: () => void updateContainers(stale, `every container shown with an update${where}`),
      },
      `Update all stale${where} (${stale.length})`,
    ),
  );
}
