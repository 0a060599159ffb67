/**
 * Update windows (docs/windows.md): when updates may be applied, as days plus a start and an end
 * time of day in the service's time zone (`TZ`), and the digest periods of the notification
 * channels, which use the same days and times. Pure: every function takes the moment it asks
 * about and the time zone, so the rules are tested against any clock, across midnight and DST.
 *
 * A window is read on the wall clock: it is open while the local time is inside it, so on the day
 * a DST change skips 02:00-03:00 a window 02:00-03:00 does not open, and on the day it repeats
 * 01:00-02:00 a window of that hour is open for both.
 */
import { fromNow } from "../core/moments.ts";

import { spend } from "./work.ts";

const DAY_NAMES = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const MINUTES_PER_DAY = 1440;
const MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY;
const MINUTE_MS = 60_000;
const EVERY_DAY: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6]);

/** One window: the days it opens on (0 = Sunday), its start and end in minutes after midnight (the end may be on the next day). */
export interface Window {
  days: ReadonlySet<number>;
  start: number;
  end: number;
  /** as written, for messages */
  text: string;
}

/**
 * When targets may be updated: open while each of its lists has an open window (the host's, and a
 * label's that narrows it). No list: always open.
 */
export type WindowPolicy = readonly (readonly Window[])[];

/** A policy as written: "Sat,Sun 02:00-05:00 within 03:00-04:00" (the host's window, then a label's); null: always open. */
export function describeWindows(policy: WindowPolicy): string | null {
  return policy.length === 0 ? null : policy.map((list) => list.map((w) => w.text).join("; ")).join(" within ");
}

/** The zone svc reads times in: TZ, as the runtime's Intl resolves it. */
export function serviceTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

// ---- parsing ----

const TIME = /^(\d{1,2}):(\d{2})$/;
const DAY_TOKEN = /^[a-z]{3}$/i;

function parseTime(text: string, isEnd: boolean): number | undefined {
  const match = TIME.exec(text);
  if (!match) return undefined;
  const hours = Number(match[1]);
  const minutes = Number(match[2]);
  if (isEnd && hours === 24 && minutes === 0) return MINUTES_PER_DAY;
  if (hours > 23 || minutes > 59) return undefined;
  return hours * 60 + minutes;
}

function dayIndex(text: string): number | undefined {
  if (!DAY_TOKEN.test(text)) return undefined;
  const index = DAY_NAMES.findIndex((name) => name.toLowerCase() === text.toLowerCase());
  return index < 0 ? undefined : index;
}

/** "Mon,Wed-Fri" (ranges may wrap: "Fri-Mon") into day indexes, or the problem. */
export function parseDays(text: string): Set<number> | { problem: string } {
  const days = new Set<number>();
  for (const part of text.split(",")) {
    const [from, to, ...rest] = part.trim().split("-");
    const first = dayIndex(from ?? "");
    const last = to === undefined ? first : dayIndex(to);
    if (first === undefined || last === undefined || rest.length > 0)
      return {
        problem: `"${part.trim()}" is not a day or a range of days (Mon, Tue, Wed, Thu, Fri, Sat, Sun; Mon-Fri)`,
      };
    for (let day = first; ; day = (day + 1) % 7) {
      days.add(day);
      if (day === last) break;
    }
  }
  return days;
}

/** One window, "[DAYS ]HH:MM-HH:MM". */
function parseWindow(text: string): Window | { problem: string } {
  const parts = text.trim().split(/\s+/);
  if (parts.length > 2 || parts[0] === "")
    return {
      problem: `"${text.trim()}" is not a window (examples: "02:00-05:00", "Sat,Sun 02:00-05:00", "Mon-Fri 23:00-01:00")`,
    };
  const days = parts.length === 2 ? parseDays(parts[0]!) : EVERY_DAY;
  if ("problem" in days) return days;
  const [startText, endText, ...rest] = parts.at(-1)!.split("-");
  const start = parseTime(startText ?? "", false);
  const end = parseTime(endText ?? "", true);
  if (start === undefined || end === undefined || rest.length > 0)
    return {
      problem: `"${text.trim()}" needs a start and an end time, HH:MM-HH:MM (24 h; an end of 24:00 is midnight)`,
    };
  if (start === end)
    return {
      problem: `"${text.trim()}" opens and closes at the same time, so it never opens (a whole day is 00:00-24:00)`,
    };
  return { days, start, end, text: text.trim() };
}

/** The longest window list svc reads (an option or a label): about 300 windows. */
export const MAX_WINDOWS_TEXT = 4096;

/**
 * Windows separated by ";" ("Sat,Sun 02:00-05:00; Wed 22:00-23:00"), or the problem naming the
 * value: one that cannot be read or never opens, or two that overlap. Linear in the text, and
 * n log n in its windows (their stretches of the week, sorted once).
 */
export function parseWindows(text: string): { windows: Window[] } | { problem: string } {
  if (text.length > MAX_WINDOWS_TEXT)
    return { problem: `is ${text.length} characters long; svc reads at most ${MAX_WINDOWS_TEXT}` };
  spend(text.length);
  const windows: Window[] = [];
  for (const part of text.split(";")) {
    spend(1);
    if (part.trim() === "") continue;
    const window = parseWindow(part);
    if ("problem" in window) return window;
    windows.push(window);
  }
  if (windows.length === 0) return { problem: "holds no window (leave it unset for no window)" };
  const stretches = sortedStretches(
    windows.flatMap((window, index) => weekStretches(window).map((stretch) => ({ ...stretch, index }))),
  );
  // sorted by start, stretches that do not overlap each end before the next starts
  for (let i = 1; i < stretches.length; i++) {
    spend(1);
    const [earlier, later] = [stretches[i - 1]!, stretches[i]!];
    if (later.from < earlier.to) {
      const [a, b] = [Math.min(earlier.index, later.index), Math.max(earlier.index, later.index)];
      return { problem: `windows "${windows[a]!.text}" and "${windows[b]!.text}" overlap (write them as one window)` };
    }
  }
  return { windows };
}

/** A stretch of the week, [from, to) in minutes from Sunday 00:00. */
interface Stretch {
  from: number;
  to: number;
}

function sortedStretches<T extends Stretch>(stretches: T[]): T[] {
  return stretches.sort((a, b) => {
    spend(1);
    return a.from - b.from || a.to - b.to;
  });
}

/** The stretches of a week a window holds, on the wall clock (one across Saturday midnight is cut in two). */
function weekStretches(window: Window): Stretch[] {
  const length = (window.end - window.start + MINUTES_PER_DAY) % MINUTES_PER_DAY || MINUTES_PER_DAY;
  const stretches: Stretch[] = [];
  for (const day of window.days) {
    spend(1);
    const from = day * MINUTES_PER_DAY + window.start;
    const to = from + length;
    if (to <= MINUTES_PER_WEEK) stretches.push({ from, to });
    else stretches.push({ from, to: MINUTES_PER_WEEK }, { from: 0, to: to - MINUTES_PER_WEEK });
  }
  return stretches;
}

/** The week's stretches a list of windows holds, sorted and merged where they touch. */
function union(windows: readonly Window[]): Stretch[] {
  const merged: Stretch[] = [];
  for (const stretch of sortedStretches(windows.flatMap(weekStretches))) {
    spend(1);
    const last = merged.at(-1);
    if (last && stretch.from <= last.to) last.to = Math.max(last.to, stretch.to);
    else merged.push({ ...stretch });
  }
  return merged;
}

/** The stretches two sorted, merged lists share (a walk along both). */
function intersect(a: readonly Stretch[], b: readonly Stretch[]): Stretch[] {
  const shared: Stretch[] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    spend(1);
    const from = Math.max(a[i]!.from, b[j]!.from);
    const to = Math.min(a[i]!.to, b[j]!.to);
    if (from < to) shared.push({ from, to });
    if (a[i]!.to < b[j]!.to) i++;
    else j++;
  }
  return shared;
}

/** True when the windows share no minute of the week: their intersection never opens. */
export function neverOpen(policy: WindowPolicy): boolean {
  if (policy.length === 0) return false;
  return policy.map(union).reduce(intersect).length === 0;
}

// ---- the wall clock of a time zone ----

interface Wall {
  year: number;
  month: number;
  day: number;
  weekday: number;
  /** minutes after midnight */
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      weekday: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The local date and time of a moment in a time zone. */
export function wallClock(at: number, timeZone: string): Wall {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone).formatToParts(at)) parts[part.type] = part.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    weekday: DAY_NAMES.indexOf(parts.weekday as (typeof DAY_NAMES)[number]),
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

/** How far the zone's wall clock is ahead of UTC at a moment, in ms. */
function offsetAt(at: number, timeZone: string): number {
  const wall = wallClock(at, timeZone);
  const wallAsUtc = Date.UTC(wall.year, wall.month - 1, wall.day, 0, wall.minute);
  return wallAsUtc - Math.floor(at / MINUTE_MS) * MINUTE_MS;
}

/** The moment a local date and time stands for (in a DST gap: the moment an hour later on the wall). */
function momentOf(year: number, month: number, day: number, minute: number, timeZone: string): number {
  const asUtc = Date.UTC(year, month - 1, day, 0, minute);
  const guess = asUtc - offsetAt(asUtc, timeZone);
  return asUtc - offsetAt(guess, timeZone);
}

// ---- the questions ----

function windowOpen(window: Window, wall: Wall): boolean {
  if (window.start < window.end)
    return window.days.has(wall.weekday) && wall.minute >= window.start && wall.minute < window.end;
  // across midnight: from the start on one of its days, to the end on the next day
  return (
    (window.days.has(wall.weekday) && wall.minute >= window.start) ||
    (window.days.has((wall.weekday + 6) % 7) && wall.minute < window.end)
  );
}

/** Whether updates may be applied at `at`. */
export function isOpen(policy: WindowPolicy, at: number, timeZone: string): boolean {
  const wall = wallClock(at, timeZone);
  return policy.every((list) => list.some((window) => windowOpen(window, wall)));
}

/** The moments windows start, from the day before `after` to nine days on, in order. */
function startsAround(windows: readonly Window[], after: number, timeZone: string): number[] {
  const today = wallClock(after, timeZone);
  const starts: number[] = [];
  for (let offset = -1; offset <= 9; offset++) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + offset));
    for (const window of windows) {
      if (window.days.has(date.getUTCDay()))
        starts.push(momentOf(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), window.start, timeZone));
    }
  }
  return starts.sort((a, b) => a - b);
}

/**
 * When updates may next be applied: `at` itself when the policy is open then, else the first
 * moment after it that opens; null when it never opens (in the next nine days: every window repeats weekly).
 */
export function nextOpening(policy: WindowPolicy, at: number, timeZone: string): number | null {
  if (isOpen(policy, at, timeZone)) return at;
  // an intersection of windows opens where one of them starts while the others are open
  for (const start of startsAround(policy.flat(), at, timeZone)) {
    if (start > at && isOpen(policy, start, timeZone)) return earliestOpen(policy, start, at, timeZone);
  }
  return null;
}

/**
 * The first moment of the open stretch that holds `open`, after `after`: a start in a DST gap
 * stands for the moment after the gap, and a start in a repeated hour opens at its first time.
 */
function earliestOpen(policy: WindowPolicy, open: number, after: number, timeZone: string): number {
  let first = open;
  for (let step = 0; step < 180 && first - MINUTE_MS > after && isOpen(policy, first - MINUTE_MS, timeZone); step++)
    first -= MINUTE_MS;
  return first;
}

/** The first start of one of `windows` strictly after `after` (a digest's next moment). */
export function nextStart(windows: readonly Window[], after: number, timeZone: string): number {
  return startsAround(windows, after, timeZone).find((start) => start > after) ?? after + MINUTES_PER_WEEK * MINUTE_MS;
}

/** "Sat 02:00 (in 9 h)": a moment as a person reads it, and how far off it is. */
export function describeMoment(at: number, now: number, timeZone: string): string {
  const wall = wallClock(at, timeZone);
  const time = `${String(Math.floor(wall.minute / 60)).padStart(2, "0")}:${String(wall.minute % 60).padStart(2, "0")}`;
  return `${DAY_NAMES[wall.weekday]} ${time} (${fromNow(at, now)})`;
}

// ---- digests ----

/**
 * A digest period, "daily HH:MM" or "weekly DAYS HH:MM" ("weekly Mon 08:00"), as the windows that
 * start at its moments; or the problem naming the value.
 */
export function parseDigestPeriod(text: string): { moments: Window[] } | { problem: string } {
  const parts = text.trim().split(/\s+/);
  const kind = parts[0]?.toLowerCase();
  const example = 'must be "daily HH:MM" or "weekly DAY HH:MM" (examples: "daily 08:00", "weekly Mon 08:00")';
  if (!((kind === "daily" && parts.length === 2) || (kind === "weekly" && parts.length === 3)))
    return { problem: example };
  const days = kind === "weekly" ? parseDays(parts[1]!) : EVERY_DAY;
  if ("problem" in days) return days;
  const start = parseTime(parts.at(-1)!, false);
  if (start === undefined) return { problem: example };
  return { moments: [{ days, start, end: (start + 1) % MINUTES_PER_DAY, text: text.trim() }] };
}
