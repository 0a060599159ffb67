/** A row's buttons and its "More" menu (one open at a time); what each does is actions.ts's or details.ts's. */
import { acceptSigner, act, rollBack, skipVersion, snoozeContainer, updateContainers } from "./actions.ts";
import { load } from "./data.ts";
import { showDetails, showTimeline } from "./details.ts";
import { type Child, h } from "./dom.ts";
import { labelOf, type Row, state, updatableNow } from "./store.ts";

/** The row's primary action (Update where a cycle would apply it now, else Check) and a menu of the others. */
export function rowActions(c: Row): Child[] {
  const reachable = c.peer === null || state.peers.some((p) => p.name === c.peer && p.up);
  if (!reachable) return [];
  const menu = h("details", { class: "menu" });
  const button = (text: string, label: string, action: () => void, className = "") =>
    h(
      "button",
      {
        type: "button",
        "aria-label": `${label} ${labelOf(c)}`,
        class: className,
        disabled: state.acting,
        onclick: () => ((menu.open = false), action()),
      },
      text,
    );
  const check = () => button("Check", "Check", () => void act(() => load([c.name], false, c.peer)));
  // held by hold_breaking, or pending for its update window: the row's Update asks for it by name,
  // which applies it (docs/release-notes.md, docs/windows.md); Update stack and Update all leave them
  const canUpdate = updatableNow(c) || (c.canAct && (c.state === "held" || c.state === "pending"));
  const primary = canUpdate ? button("Update", "Update", () => void updateContainers([c]), "primary") : check();
  const more: Child[] = [
    canUpdate && check(),
    button("Details", "Details of", () => void showDetails(c)),
    button("History", "History of", () => void showTimeline(c)),
  ];
  if (c.canAct) {
    // a signer change (or a lost signature) with no policy: only a person says it is expected
    if (c.signature?.status === "held" && c.signature.policy === "pinned")
      more.push(button("Accept new signer", "Accept the new signer of", () => void acceptSigner(c)));
    if (c.available_version) more.push(button("Skip this version", "Skip this version of", () => void skipVersion(c)));
    more.push(
      button(c.snoozed_until ? "Snoozed: change" : "Snooze", "Snooze updates of", () => void snoozeContainer(c)),
    );
    if (c.previous_image_id) more.push(button("Roll back", "Roll back", () => void rollBack(c), "danger"));
  }
  menu.append(
    h("summary", { "aria-label": `More actions for ${labelOf(c)}` }, "More"),
    h("div", { class: "menu-items" }, ...more.filter((item): item is HTMLButtonElement => item instanceof HTMLElement)),
  );
  menu.addEventListener("toggle", () => menu.open && closeMenus(menu));
  menu.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !menu.open) return;
    menu.open = false;
    menu.querySelector("summary")?.focus();
  });
  return [primary, menu];
}

/** One row menu open at a time. */
function closeMenus(except?: HTMLDetailsElement): void {
  for (const open of document.querySelectorAll<HTMLDetailsElement>("details.menu[open]"))
    if (open !== except) open.open = false;
}
