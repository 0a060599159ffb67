/**
 * WWW-Authenticate challenges of the registry API (RFC 7235 syntax): `Basic realm="r"` or
 * `Bearer realm="https://auth/token",service="registry",scope="repository:x:pull"`.
 */
export interface Challenge {
  /** lower-cased: "basic", "bearer", ... */
  scheme: string;
  /** parameter names lower-cased, values unquoted */
  params: Record<string, string>;
}

/**
 * Parses a WWW-Authenticate value into its challenges (a header may carry several, comma-separated,
 * and parameter values may themselves contain commas inside quotes).
 */
export function parseChallenges(header: string | null | undefined): Challenge[] {
  if (!header) return [];
  const challenges: Challenge[] = [];
  let i = 0;
  const n = header.length;
  const skip = (pattern: RegExp) => {
    while (i < n && pattern.test(header[i]!)) i++;
  };
  while (i < n) {
    skip(/[\s,]/);
    const schemeStart = i;
    while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(header[i]!)) i++;
    if (i === schemeStart) {
      i++;
      continue;
    }
    const challenge: Challenge = { scheme: header.slice(schemeStart, i).toLowerCase(), params: {} };
    challenges.push(challenge);
    // parameters: name=value pairs until a token that is not followed by "=" (the next scheme)
    for (;;) {
      skip(/[\s,]/);
      const nameStart = i;
      while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(header[i]!)) i++;
      const name = header.slice(nameStart, i);
      let j = i;
      while (j < n && /\s/.test(header[j]!)) j++;
      if (name === "" || header[j] !== "=") {
        i = nameStart;
        break;
      }
      i = j + 1;
      while (i < n && /\s/.test(header[i]!)) i++;
      let value = "";
      if (header[i] === '"') {
        i++;
        while (i < n && header[i] !== '"') {
          if (header[i] === "\\" && i + 1 < n) i++;
          value += header[i];
          i++;
        }
        i++;
      } else {
        const valueStart = i;
        while (i < n && header[i] !== "," && !/\s/.test(header[i]!)) i++;
        value = header.slice(valueStart, i);
      }
      challenge.params[name.toLowerCase()] = value;
    }
    if (i === schemeStart) i++;
  }
  return challenges;
}

/** The challenge svc can answer, Bearer preferred over Basic. */
export function pickChallenge(challenges: Challenge[]): Challenge | undefined {
  return (
    challenges.find((c) => c.scheme === "bearer" && c.params.realm) ?? challenges.find((c) => c.scheme === "basic")
  );
}
