/**
 * Whether a release breaks (docs/release-notes.md): its version starts a new semver major, or its
 * title or notes say so (`BREAKING`, "breaking change", a conventional commit's `type!:` or
 * `type(scope)!:`). Notes are capped before they get here; every pattern is linear.
 */
import type { Version } from "./versions.ts";

const SAYS_BREAKING = [/\bBREAKING\b/, /\bbreaking[ -]changes?\b/i, /(?:^|\s)[a-z]{1,20}(?:\([^()\n]{0,64}\))?!:\s/m];

export function saysBreaking(text: string): boolean {
  return SAYS_BREAKING.some((pattern) => pattern.test(text));
}

/** A new major: its major is above the one before it (versions 0.x are not told apart by minor). */
export function newMajor(version: Version, before: Version | undefined): boolean {
  if (!version.parts || !before?.parts) return false;
  return version.parts[0] > before.parts[0];
}
