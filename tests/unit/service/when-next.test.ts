/** The start's last line says when the first check comes (README.md, "Quick start"). */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { whenNext } from "../../../src/service/when-next.ts";

const now = new Date(2026, 10, 25, 22, 48, 0);

test("next check at HH:MM (in 5 h 12 min); the date when it is a day or more away", () => {
  const config = defaultConfig();
  expect(whenNext(config, new Date(2026, 10, 26, 4, 0, 0), now)).toBe("next check at 04:00 (in 5 h 12 min)");
  expect(whenNext(config, new Date(2026, 10, 25, 22, 51, 0), now)).toBe("next check at 22:51 (in 3 min)");
  expect(whenNext(config, new Date(2026, 10, 28, 4, 0, 0), now)).toBe("next check at 2026-11-28 04:00 (in 2 d 5 h)");
});

test("with update_on_start, or only on request, it says so", () => {
  expect(whenNext(defaultConfig({ update_on_start: true }), new Date(2026, 10, 26, 4, 48, 0), now)).toBe(
    "first check now (update_on_start), then at 04:48",
  );
  expect(whenNext(defaultConfig({ http_api: { update: true } }), undefined, now)).toBe(
    "checks only on request (POST /v1/update)",
  );
  expect(whenNext(defaultConfig({ http_api: { update: true } }), new Date(2026, 10, 26, 4, 48, 0), now)).toBe(
    "next check at 04:48 (in 6 h); also on request (POST /v1/update)",
  );
});
