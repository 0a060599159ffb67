/** The containers svc leaves alone, and why: folded away under the table. */
import { h, replace } from "./dom.ts";
import { hostData, state, subscribe } from "./store.ts";

export const excluded = h("details", { class: "excluded", hidden: true });

subscribe(["data"], () => {
  const localHost = state.data!.host;
  const left = hostData().flatMap((host) =>
    (host.answer?.excluded ?? []).map((c) => ({ ...c, host: host.peer ?? localHost, peer: host.peer })),
  );
  excluded.hidden = left.length === 0;
  replace(
    excluded,
    h("summary", {}, `Left alone (${left.length})`),
    h(
      "ul",
      {},
      ...left.map((c) =>
        h(
          "li",
          { "data-container": c.name },
          h(
            "span",
            { class: "name" },
            c.peer === null ? c.name : `${c.name} on ${c.peer}`,
            c.kind === "service" && h("span", { class: "marker" }, "service"),
          ),
          ` (${c.image}, ${c.state}): ${c.reason}`,
        ),
      ),
    ),
  );
});
