/** The filter form above the table: a name to search, a state, a host, only rows with an update. */
import { h, replace } from "./dom.ts";
import { notify, state, subscribe } from "./store.ts";

const hostFilter = h("select", { id: "filter-host", name: "host" });
hostFilter.addEventListener("change", () => ((state.filters.host = hostFilter.value), notify("filters")));

/** The state filter, in the words the rows use. */
const STATE_CHOICES: [string, string][] = [
  ["", "any"],
  ["stale", "update available or held"],
  ["pending", "waiting for its update window"],
  ["fresh", "up to date"],
  ["skipped", "skipped or not checked"],
  ["updated", "updated"],
  ["failed", "update failed"],
  ["rolled_back", "rolled back"],
];

// the hosts to choose from: this svc and its peers
subscribe(["data"], () => {
  const hosts = [state.data!.host, ...state.peers.map((p) => p.name)];
  replace(
    hostFilter,
    h("option", { value: "" }, "all"),
    ...hosts.map((host) => h("option", { value: host, selected: host === state.filters.host }, host)),
  );
});

// a host pressed in the summary bar is the host chosen here
subscribe(["glance"], () => (hostFilter.value = state.filters.host));

export function filtersForm(): HTMLFormElement {
  const search = h("input", {
    id: "filter-search",
    type: "search",
    name: "search",
    placeholder: "name",
    autocomplete: "off",
  });
  search.addEventListener("input", () => ((state.filters.search = search.value), notify("filters")));
  const stateFilter = h(
    "select",
    { id: "filter-state", name: "state" },
    ...STATE_CHOICES.map(([value, words]) => h("option", { value }, words)),
  );
  stateFilter.addEventListener("change", () => ((state.filters.state = stateFilter.value), notify("filters")));
  const onlyUpdates = h("input", { id: "filter-updates", type: "checkbox", name: "updates" });
  onlyUpdates.addEventListener("change", () => ((state.filters.onlyUpdates = onlyUpdates.checked), notify("filters")));
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter containers",
      onsubmit: (event: Event) => event.preventDefault(),
    },
    field("Search", search),
    field("State", stateFilter),
    field("Host", hostFilter),
    h("div", { class: "check" }, onlyUpdates, h("label", { for: "filter-updates" }, "Only with updates")),
  );
}

function field(label: string, control: HTMLInputElement | HTMLSelectElement): HTMLElement {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}
