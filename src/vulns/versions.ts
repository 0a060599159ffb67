/**
 * Version order of the three package formats svc reads (docs/vulnerabilities.md), each by its
 * own rules, never semver: dpkg's (epochs, tildes before everything), apk's (suffixes such as
 * `_alpha` before a release, `_p` after, `-r` revisions) and rpm's (rpmvercmp, epochs, `~` and
 * `^`). Each answers -1, 0 or 1. Pure: no import.
 */

export type VersionFormat = "dpkg" | "apk" | "rpm";

export function compareVersions(format: VersionFormat, a: string, b: string): number {
  if (format === "dpkg") return compareDpkg(a, b);
  if (format === "apk") return compareApk(a, b);
  return compareRpmEvr(a, b);
}

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isLetter = (c: string | undefined): boolean =>
  c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z"));

// ---- dpkg (deb-version(7)) ----

interface DebVersion {
  epoch: number;
  upstream: string;
  revision: string;
}

/**
 * `[epoch:]version[-release]`, as dpkg and rpm both write it: the epoch (0 when absent) before the
 * first colon, the release after the last hyphen.
 */
function splitEpoch(text: string): { epoch: number; version: string; release: string } {
  const trimmed = text.trim();
  const colon = trimmed.indexOf(":");
  const epoch = colon > 0 && /^\d+$/.test(trimmed.slice(0, colon)) ? Number(trimmed.slice(0, colon)) : 0;
  const rest = colon > 0 ? trimmed.slice(colon + 1) : trimmed;
  const hyphen = rest.lastIndexOf("-");
  return hyphen >= 0
    ? { epoch, version: rest.slice(0, hyphen), release: rest.slice(hyphen + 1) }
    : { epoch, version: rest, release: "" };
}

/** `[epoch:]upstream[-revision]`: dpkg's names for splitEpoch's parts. */
export function parseDebVersion(text: string): DebVersion {
  const { epoch, version, release } = splitEpoch(text);
  return { epoch, upstream: version, revision: release };
}

export function compareDpkg(a: string, b: string): number {
  const va = parseDebVersion(a);
  const vb = parseDebVersion(b);
  if (va.epoch !== vb.epoch) return sign(va.epoch - vb.epoch);
  return verrevcmp(va.upstream, vb.upstream) || verrevcmp(va.revision, vb.revision);
}

/** A character's weight in dpkg's order: `~` below the end of the string, letters below other marks. */
function dpkgOrder(c: string | undefined): number {
  if (c === undefined || isDigit(c)) return 0;
  if (isLetter(c)) return c.charCodeAt(0);
  if (c === "~") return -1;
  return c.charCodeAt(0) + 256;
}

function verrevcmp(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let firstDiff = 0;
    while ((i < a.length && !isDigit(a[i])) || (j < b.length && !isDigit(b[j]))) {
      const ac = dpkgOrder(a[i]);
      const bc = dpkgOrder(b[j]);
      if (ac !== bc) return sign(ac - bc);
      i++;
      j++;
    }
    while (a[i] === "0") i++;
    while (b[j] === "0") j++;
    while (isDigit(a[i]) && isDigit(b[j])) {
      if (!firstDiff) firstDiff = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (isDigit(a[i])) return 1;
    if (isDigit(b[j])) return -1;
    if (firstDiff) return sign(firstDiff);
  }
  return 0;
}

// ---- apk (apk-tools' version.c) ----

/** Token kinds in apk's order: a later kind at the same place makes the version smaller. */
enum Apk {
  Invalid = -1,
  DigitOrZero = 0,
  Digit = 1,
  Letter = 2,
  Suffix = 3,
  SuffixNo = 4,
  RevisionNo = 5,
  End = 6,
}

const APK_PRE_SUFFIXES = ["alpha", "beta", "pre", "rc"];
const APK_POST_SUFFIXES = ["cvs", "svn", "git", "hg", "p"];

interface ApkCursor {
  text: string;
  at: number;
  kind: Apk;
}

/** What follows the token just read: apk's next_token. */
function apkNextKind(cursor: ApkCursor): void {
  const { text } = cursor;
  const c = text[cursor.at];
  let next: Apk = Apk.Invalid;
  if (c === undefined || c === "\0") next = Apk.End;
  else if ((cursor.kind === Apk.Digit || cursor.kind === Apk.DigitOrZero) && c >= "a" && c <= "z") next = Apk.Letter;
  else if (cursor.kind === Apk.Letter && isDigit(c)) next = Apk.Digit;
  else if (cursor.kind === Apk.Suffix && isDigit(c)) next = Apk.SuffixNo;
  else {
    if (c === ".") next = Apk.DigitOrZero;
    else if (c === "_") next = Apk.Suffix;
    else if (c === "-" && text[cursor.at + 1] === "r") {
      next = Apk.RevisionNo;
      cursor.at++;
    }
    cursor.at++;
  }
  const allowedBackwards =
    (next === Apk.DigitOrZero && cursor.kind === Apk.Digit) ||
    (next === Apk.Suffix && cursor.kind === Apk.SuffixNo) ||
    (next === Apk.Digit && cursor.kind === Apk.Letter);
  if (next < cursor.kind && !allowedBackwards) next = Apk.Invalid;
  cursor.kind = next;
}

/** Reads the token at the cursor (of the kind the cursor says), moves on, and answers its value. */
function apkToken(cursor: ApkCursor): number {
  const { text } = cursor;
  if (cursor.at >= text.length) {
    cursor.kind = Apk.End;
    return 0;
  }
  let value = 0;
  let length = 0;
  let forced: Apk = Apk.Invalid;
  const digits = () => {
    while (isDigit(text[cursor.at + length])) value = value * 10 + Number(text[cursor.at + length++]);
  };
  switch (cursor.kind) {
    case Apk.DigitOrZero:
      if (text[cursor.at] === "0") {
        // leading zeros: ".05" sorts below ".5" and apart from it
        while (text[cursor.at + length] === "0") length++;
        // digits after the zeros are read as a number of their own; anything else follows as after a number
        if (isDigit(text[cursor.at + length])) forced = Apk.Digit;
        else cursor.kind = Apk.Digit;
        value = -length;
        break;
      }
      digits();
      break;
    case Apk.Digit:
    case Apk.SuffixNo:
    case Apk.RevisionNo:
      digits();
      break;
    case Apk.Letter:
      value = text.charCodeAt(cursor.at);
      length = 1;
      break;
    case Apk.Suffix: {
      const rest = text.slice(cursor.at);
      const pre = APK_PRE_SUFFIXES.findIndex((s) => rest.startsWith(s));
      const post = APK_POST_SUFFIXES.findIndex((s) => rest.startsWith(s));
      if (pre >= 0) {
        value = pre - APK_PRE_SUFFIXES.length;
        length = APK_PRE_SUFFIXES[pre]!.length;
      } else if (post >= 0) {
        value = post;
        length = APK_POST_SUFFIXES[post]!.length;
      } else {
        cursor.kind = Apk.Invalid;
        return -1;
      }
      break;
    }
    default:
      cursor.kind = Apk.Invalid;
      return -1;
  }
  cursor.at += length;
  if (cursor.at >= text.length) cursor.kind = Apk.End;
  else if (forced !== Apk.Invalid) cursor.kind = forced;
  else apkNextKind(cursor);
  return value;
}

export function compareApk(a: string, b: string): number {
  const ca: ApkCursor = { text: a.trim(), at: 0, kind: Apk.Digit };
  const cb: ApkCursor = { text: b.trim(), at: 0, kind: Apk.Digit };
  let av = 0;
  let bv = 0;
  while (ca.kind === cb.kind && ca.kind !== Apk.End && ca.kind !== Apk.Invalid && av === bv) {
    av = apkToken(ca);
    bv = apkToken(cb);
  }
  if (av !== bv) return av < bv ? -1 : 1;
  if (ca.kind === cb.kind) return 0;
  // equal so far: the longer version is greater, unless what it goes on with is a pre-release suffix
  if (ca.kind === Apk.Suffix && apkToken({ ...ca }) < 0) return -1;
  if (cb.kind === Apk.Suffix && apkToken({ ...cb }) < 0) return 1;
  if (ca.kind > cb.kind) return -1;
  if (cb.kind > ca.kind) return 1;
  return 0;
}

// ---- rpm (rpmvercmp, and epoch:version-release) ----

const isAlnum = (c: string | undefined): boolean => isDigit(c) || isLetter(c);

export function rpmvercmp(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while (i < a.length && !isAlnum(a[i]) && a[i] !== "~" && a[i] !== "^") i++;
    while (j < b.length && !isAlnum(b[j]) && b[j] !== "~" && b[j] !== "^") j++;
    // a tilde sorts before everything, the end of the string included
    if (a[i] === "~" || b[j] === "~") {
      if (a[i] !== "~") return 1;
      if (b[j] !== "~") return -1;
      i++;
      j++;
      continue;
    }
    // a caret sorts after the end of the string, before anything else
    if (a[i] === "^" || b[j] === "^") {
      if (i >= a.length) return -1;
      if (j >= b.length) return 1;
      if (a[i] !== "^") return 1;
      if (b[j] !== "^") return -1;
      i++;
      j++;
      continue;
    }
    if (i >= a.length || j >= b.length) break;
    const numeric = isDigit(a[i]);
    const take = numeric ? isDigit : isLetter;
    let ie = i;
    let je = j;
    while (ie < a.length && take(a[ie])) ie++;
    while (je < b.length && take(b[je])) je++;
    if (je === j) return numeric ? 1 : -1; // a number is newer than letters
    let sa = a.slice(i, ie);
    let sb = b.slice(j, je);
    if (numeric) {
      sa = sa.replace(/^0+/, "");
      sb = sb.replace(/^0+/, "");
      if (sa.length !== sb.length) return sa.length > sb.length ? 1 : -1;
    }
    if (sa !== sb) return sa < sb ? -1 : 1;
    i = ie;
    j = je;
  }
  if (i >= a.length && j >= b.length) return 0;
  return i >= a.length ? -1 : 1;
}

/** `[epoch:]version[-release]`, the epoch 0 when absent. */
export const parseRpmEvr = splitEpoch;

export function compareRpmEvr(a: string, b: string): number {
  const va = parseRpmEvr(a);
  const vb = parseRpmEvr(b);
  if (va.epoch !== vb.epoch) return sign(va.epoch - vb.epoch);
  return rpmvercmp(va.version, vb.version) || rpmvercmp(va.release, vb.release);
}
