/**
 * The page's one way to build the DOM. Children are nodes or strings, and a string always becomes
 * a text node: what an engine or a registry says (names, labels, tags, reasons) can never turn
 * into markup, whatever it holds. There is no innerHTML anywhere in the page.
 */
import { httpUrl } from "../../core/urls.ts";

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  [attribute: string]: string | number | boolean | undefined | null | ((event: Event) => void);
}

/** An element with attributes (a function is an event listener: `onclick`) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/**
 * A reference or a long name that may wrap at its tokens' edges (after `/`, `:`, `@`, `.`, `-`,
 * `_`), never inside a token: text nodes with a <wbr> between them.
 */
export function breakable(text: string): Child[] {
  const parts = text.split(/(?<=[/:@._-])/);
  return parts.flatMap((part, index) => (index === 0 ? [part] : [document.createElement("wbr"), part]));
}

/** Replaces everything inside `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** A link only for http(s) addresses: a label may hold `javascript:` too (core/urls.ts). */
export const safeHref = httpUrl;
