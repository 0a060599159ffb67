/** The table: rows grouped by compose project and Swarm stack, each group folding away under its heading. */
import { countRows } from "../summary.ts";
import { updateContainers } from "./actions.ts";
import { h, replace } from "./dom.ts";
import { GROUP_WORDS } from "./format.ts";
import { shownRow } from "./row.ts";
import { notify, type Row, state, subscribe, updatableNow, visibleRows } from "./store.ts";

export const table = h("table", { class: "containers" });
const selectAll = h("input", { type: "checkbox", id: "select-all", "aria-label": "Select every container shown" });

selectAll.addEventListener("change", () => {
  for (const row of visibleRows())
    if (row.canAct) selectAll.checked ? state.selected.add(row.key) : state.selected.delete(row.key);
  renderRows();
  notify("selection");
});

subscribe(["data", "filters", "glance", "acting"], renderRows);

const COLUMNS = ["Container", "Running", "Available", "Policy", "State", "Actions"];

/** The caption (with `checked`: when the list was checked) and the column headings. */
export function tableHead(checked: HTMLElement): void {
  replace(
    table,
    h("caption", {}, "Containers svc watches", checked),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "select" }, selectAll),
        ...COLUMNS.map((title) => h("th", { scope: "col" }, title)),
      ),
    ),
  );
}

interface Group {
  key: string;
  /** the project's or stack's name; "standalone" for the rest */
  name: string;
  kind: "compose" | "stack" | "standalone";
  peer: string | null;
  host: string;
  rows: Row[];
}

/** Rows by host and group; within a host the named groups by name, the standalone rows last. */
function groupsOf(rows: Row[]): Group[] {
  const groups = new Map<string, Group>();
  for (const row of rows) {
    const kind = row.group?.kind ?? "standalone";
    const name = row.group?.name ?? "standalone";
    const key = `${row.peer ?? ""}/${kind}/${name}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { key, name, kind, peer: row.peer, host: row.host, rows: [] }));
    group.rows.push(row);
  }
  const order = (g: Group) => `${g.peer ?? ""}\u0000${g.kind === "standalone" ? "\u0001" : ""}${g.name}`;
  return [...groups.values()].sort((a, b) => order(a).localeCompare(order(b)));
}

function renderRows(): void {
  const rows = visibleRows();
  const anyAct = state.rows.some((row) => row.canAct);
  selectAll.disabled = !anyAct;
  selectAll.checked = rows.length > 0 && rows.every((row) => state.selected.has(row.key));
  for (const body of [...table.tBodies]) body.remove();
  if (!rows.length) {
    table.append(
      h(
        "tbody",
        {},
        h(
          "tr",
          {},
          h(
            "td",
            { colspan: 7, class: "empty" },
            state.rows.length ? "No container matches the filters." : "svc watches no container.",
          ),
        ),
      ),
    );
  } else {
    const groups = groupsOf(rows);
    // only standalone containers: one plain list, no heading
    const headed = groups.some((group) => group.kind !== "standalone");
    table.append(...groups.map((group) => renderGroup(group, headed)));
  }
}

/** A group's rows under a heading that folds them away, with its counts and "Update stack". */
function renderGroup(group: Group, headed: boolean): HTMLTableSectionElement {
  const collapsed = headed && state.collapsed.has(group.key);
  const body = h("tbody", { class: "group", "data-group": group.name, "data-group-kind": group.kind });
  if (headed) body.append(groupHeading(group, collapsed));
  if (!collapsed) body.append(...group.rows.map(shownRow));
  return body;
}

function groupHeading(group: Group, collapsed: boolean): HTMLTableRowElement {
  const counts = countRows(group.rows);
  const where = group.peer === null ? "" : ` on ${group.peer}`;
  const parts = [`${counts.containers} ${counts.containers === 1 ? "container" : "containers"}`];
  if (counts.updates) parts.push(`${counts.updates} ${counts.updates === 1 ? "update" : "updates"}`);
  if (counts.held) parts.push(`${counts.held} held`);
  if (counts.failed) parts.push(`${counts.failed} failed`);
  const toggle = h(
    "button",
    {
      type: "button",
      class: "group-toggle",
      "data-key": group.key,
      "aria-expanded": String(!collapsed),
      onclick: () => (
        collapsed ? state.collapsed.delete(group.key) : state.collapsed.add(group.key),
        renderRows(),
        focusToggle(group.key)
      ),
    },
    h("span", { class: "chevron", "aria-hidden": "true" }, collapsed ? "▸" : "▾"),
    h("strong", {}, group.name + where),
    group.kind !== "standalone" && h("span", { class: "marker" }, GROUP_WORDS[group.kind]),
    h("span", { class: "group-counts" }, parts.join(" · ")),
  );
  const stale = group.rows.filter(updatableNow);
  const label = `${GROUP_WORDS[group.kind]} ${group.name}${where}`.trim();
  const updateStack =
    group.kind !== "standalone" &&
    stale.length > 0 &&
    h(
      "button",
      {
        type: "button",
        class: "primary",
        disabled: state.acting,
        "aria-label": `Update stack ${group.name}${where}`,
        onclick: () =>
          void updateContainers(
            stale,
            `the ${stale.length} containers of ${label} with an update (${stale.map((row) => row.name).join(", ")}), in their dependency order`,
          ),
      },
      `Update stack (${stale.length})`,
    );
  return h(
    "tr",
    { class: "group-heading" },
    h("th", { colspan: 7, scope: "rowgroup" }, h("div", { class: "group-bar" }, toggle, updateStack)),
  );
}

/** The keyboard stays on a group's heading as it folds and unfolds (the table is drawn anew). */
function focusToggle(key: string): void {
  for (const toggle of table.querySelectorAll<HTMLButtonElement>(".group-toggle"))
    if (toggle.dataset.key === key) toggle.focus();
}
