/**
 * The Data copies section: the data guard's copies (docs/data-guard.md) kept on this host and on
 * each peer that answers, with their container, size, age and version, and a Delete for each
 * where the page may act on that host. Listed anew after each full check, when a copy was
 * deleted, and when a peer comes or goes.
 */
import { deleteCopy } from "./actions.ts";
import { ApiError, apiOf, type CopyView } from "./api.ts";
import { h, replace } from "./dom.ts";
import { fromNow, localTime, messageOf, sizeWords } from "./format.ts";
import { hostData, state, subscribe } from "./store.ts";

const list = h("tbody");
const problems = h("ul", { class: "copies-problems" });
export const copies = h(
  "section",
  { class: "copies-section", "aria-labelledby": "copies-title", hidden: true },
  h("h2", { id: "copies-title" }, "Data copies"),
  problems,
  h(
    "table",
    { class: "copies" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Container", "Size", "Taken", "Version", "Goes", ""].map((words) => h("th", { scope: "col" }, words)),
      ),
    ),
    list,
  ),
);

/**
 * The hosts whose copies were last asked for, one a line (this host an empty line): a peer that
 * comes or goes is asked then. This host alone is asked at the first full check ("checked").
 */
let asked = "";
/** Answers of an earlier load that arrive after a later one's are dropped. */
let loads = 0;

subscribe(["checked", "copies"], () => void loadCopies());
subscribe(["data"], () => {
  if (state.data && hostsToAsk().join("\n") !== asked) void loadCopies();
});

/** This host, and each peer that answers (an unreachable one keeps nothing the page could delete). */
function hostsToAsk(): (string | null)[] {
  return [null, ...state.peers.filter((p) => p.up).map((p) => p.name)];
}

interface HostCopies {
  peer: string | null;
  host: string;
  canAct: boolean;
  copies: CopyView[];
  problem: string | null;
}

async function loadCopies(): Promise<void> {
  const load = ++loads;
  const hosts = hostsToAsk();
  asked = hosts.join("\n");
  const acting = new Map(hostData().map((host) => [host.peer, host.canAct]));
  const answers = await Promise.all(
    hosts.map(async (peer): Promise<HostCopies> => {
      const host = peer ?? state.data?.host ?? "this host";
      const canAct = acting.get(peer) ?? false;
      try {
        return { peer, host, canAct, copies: (await apiOf(peer).dataCopies()).copies, problem: null };
      } catch (failure) {
        // a peer of an older svc has no data guard: nothing to list, nothing wrong
        const quiet = failure instanceof ApiError && (failure.status === 401 || failure.status === 404);
        return { peer, host, canAct, copies: [], problem: quiet ? null : messageOf(failure) };
      }
    }),
  );
  if (load !== loads) return;
  draw(answers);
}

function draw(hosts: HostCopies[]): void {
  const rows = hosts.flatMap((host) => host.copies.map((copy) => copyRow(host, copy)));
  const failed = hosts.filter((host) => host.problem !== null);
  copies.hidden = rows.length === 0 && failed.length === 0;
  replace(
    problems,
    ...failed.map((host) => h("li", { class: "error", "data-host": host.host }, `${host.host}: ${host.problem}`)),
  );
  replace(list, ...rows);
}

function copyRow(host: HostCopies, copy: CopyView): HTMLTableRowElement {
  const label = host.peer === null ? copy.container : `${copy.container} on ${host.peer}`;
  return h(
    "tr",
    { "data-copy-of": copy.container, "data-host": host.host, "data-copy": copy.id },
    h("td", {}, h("span", { class: "name" }, label)),
    h("td", { class: "size" }, sizeWords(copy.bytes)),
    h("td", { class: "taken", title: localTime(copy.created_at) }, fromNow(copy.created_at)),
    h("td", { class: "version" }, copy.version ?? "unknown"),
    h(
      "td",
      { class: "goes" },
      copy.restoring
        ? "being restored"
        : copy.expires_at
          ? h("span", { title: localTime(copy.expires_at) }, fromNow(copy.expires_at))
          : // kept until its container's next update replaces it (data_guard_keep counts from then)
            "at the next update",
    ),
    h(
      "td",
      {},
      host.canAct &&
        h(
          "button",
          {
            type: "button",
            class: "secondary",
            "aria-label": `Delete the copy of ${label}'s data`,
            disabled: copy.restoring,
            onclick: () => void deleteCopy(host.peer, copy),
          },
          "Delete",
        ),
    ),
  );
}
