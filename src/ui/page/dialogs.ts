/**
 * The page's two dialogs: one that asks (confirm, or choose a value) before an action, and one
 * that only shows something. Built once with dom.ts; the dashboard places their elements.
 */
import { type Child, h, replace } from "./dom.ts";

export const confirmDialog = (() => {
  const title = h("h2", { id: "dialog-title" });
  const text = h("p", { id: "dialog-text" });
  const extra = h("div");
  const cancel = h("button", { type: "button", class: "secondary", value: "cancel" }, "Cancel");
  const confirm = h("button", { type: "submit", class: "primary", value: "confirm" });
  const element = h(
    "dialog",
    { "aria-labelledby": "dialog-title", "aria-describedby": "dialog-text" },
    h("form", { method: "dialog" }, title, text, extra, h("div", { class: "dialog-actions" }, cancel, confirm)),
  );
  cancel.addEventListener("click", () => element.close("cancel"));
  const open = (heading: string, message: string, content: Child, action: string): Promise<string> => {
    replace(title, heading);
    replace(text, message);
    replace(extra, content);
    replace(confirm, action);
    element.returnValue = "";
    element.showModal();
    cancel.focus();
    return new Promise((resolve) =>
      element.addEventListener("close", () => resolve(element.returnValue), { once: true }),
    );
  };
  return {
    element,
    /** resolves true when the person confirms (Escape and Cancel say no) */
    ask: async (heading: string, message: string, action: string) =>
      (await open(heading, message, null, action)) === "confirm",
    /** resolves with the chosen value, or null */
    choose: async (heading: string, message: string, label: string, choices: [string, string][], action = "Snooze") => {
      const select = h(
        "select",
        { id: "dialog-choice" },
        ...choices.map(([value, words]) => h("option", { value }, words)),
      );
      const chosen =
        (await open(
          heading,
          message,
          h("div", { class: "field" }, h("label", { for: "dialog-choice" }, label), select),
          action,
        )) === "confirm";
      return chosen ? select.value : null;
    },
  };
})();

/** A dialog that only shows something, closed with its button or Escape. */
export const infoDialog = (() => {
  const title = h("h2", { id: "info-title" });
  const content = h("div", { class: "info-content" });
  const close = h("button", { type: "submit", class: "secondary" }, "Close");
  const element = h(
    "dialog",
    { "aria-labelledby": "info-title", class: "info" },
    h("form", { method: "dialog" }, title, content, h("div", { class: "dialog-actions" }, close)),
  );
  return {
    element,
    show(heading: string, body: Child): Promise<void> {
      replace(title, heading);
      replace(content, body);
      element.showModal();
      close.focus();
      return new Promise((resolve) => element.addEventListener("close", () => resolve(), { once: true }));
    },
  };
})();
