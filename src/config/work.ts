/**
 * Work units spent by the parsers that read labels (an image's, so anyone's): a count a test holds
 * a budget to (docs/security.md), where a budget in seconds would depend on the machine. Each
 * parser adds what its loops walk: a window, an interval, a comparison, a character of a pattern.
 */
let units = 0;

export function spend(amount: number): void {
  units += amount;
}

/** The units spent since the process started (a test reads it before and after). */
export function workSpent(): number {
  return units;
}
