/**
 * Version order per format, on rows from each tool's own test suite (each block names its file);
 * the expected answer is the tool's.
 */
import { describe, expect, test } from "bun:test";
import { compareApk, compareDpkg, compareRpmEvr, rpmvercmp } from "../../../src/vulns/versions.ts";

/** dpkg, scripts/t/100_Dpkg_Version.t (its __DATA__ rows: a b expected) and lib/dpkg/t/t-version.c */
const DPKG_ROWS = `
1.0-1 2.0-2 -1
2.2~rc-4 2.2-1 -1
2.2-1 2.2~rc-4 1
1.0000-1 1.0-1 0
1 0:1 0
0 0:0-0 0
2:2.5 1:7.5 1
1:0foo 0foo 1
0:0foo 0foo 0
0foo 0foo 0
0foo- 0foo 0
0foo- 0foo-0 0
0foo 0fo 1
0foo- 0foo+ -1
0foo~1 0foo -1
0foo~foo+Bar 0foo~foo+bar -1
0foo~~ 0foo~ -1
1~ 1 -1
12345+that-really-is-some-ver-0 12345+that-really-is-some-ver-10 -1
0foo-0 0foo-01 -1
0foo.bar 0foobar 1
0foo.bar 0foo1bar 1
0foo.bar 0foo0bar 1
0foo1bar-1 0foobar-1 -1
0foo2.0 0foo2 1
0foo2.0.0 0foo2.10.0 -1
0foo2.0 0foo2.0.0 -1
0foo2.0 0foo2.10 -1
0foo2.1 0foo2.10 -1
1.09 1.9 0
1.0.8+nmu1 1.0.8 1
3.11 3.10+nmu1 1
0.9j-20080306-4 0.9i-20070324-2 1
1.2.0~b7-1 1.2.0~b6-1 1
1.011-1 1.06-2 1
0.0.9+dfsg1-1 0.0.8+dfsg1-3 1
4.6.99+svn6582-1 4.6.99+svn6496-1 1
53 52 1
0.9.9~pre122-1 0.9.9~pre111-1 1
2:2.3.2-2+lenny2 2:2.3.2-2 1
1:3.8.1-1 3.8.GA-1 1
1.0.1+gpl-1 1.0.1-2 1
1a 1000a -1
0:0-00 0:00-0 0
1:2-3 1:2-3 0
0:0-0 1:0-0 -1
0:a-0 0:b-0 -1
0:0-a 0:0-b -1
`;

/** apk-tools, test/version.data (a op b), a sample of its rows */
const APK_ROWS = `
2.34 > 0.1.0_alpha
23_foo > 4_beta
1.0 < 1.0bc
0.1.0_alpha = 0.1.0_alpha
0.1.0_alpha < 0.1.3_alpha
0.1.0_alpha2 > 0.1.0_alpha
0.1.0_alpha < 2.2.39-r1
1.0.4-r3 < 1.0.4-r4
1.1 > 1.1_alpha1
1.3_alpha < 1.3_alpha2
0.7.0 < 0.8_beta1
3.10.18-r1 > 2.3.0b-r1
2.3.0b-r1 < 2.3.0b-r2
0.12.3 > 0.12
0.12 < 0.13_beta1
1.2.11 < 1.2.12.1
3.1_p16 < 3.1_p17
3.1_p17 > 1.06-r6
1.06-r6 < 006
006 > 1.0.0
1.2.2-r1 > 1.2.2
2.59 < 20050718-r1
3.9.8-r5 > 2.01.01_alpha10
1.0 > 0.99.3.20040818
2.8.9-r1 > 2.8.9
20060720 > 3.0.20060720
2.5.1-r8 < 2.5.1a-r1
1.3.5-r10 > 1.3.5-r8
20040401 > 2.0.0_rc3-r1
3.0.0-r2 < 021109-r3
0.9.16-r1 < 3.9_pre20060124
1.1.7 < 6b-r7
0.10.0 < 0.10.1_rc1
4.5_p1-r1 > 4.5_p1
0.9.8c-r1 < 0.9.8d
1.7 < 1.7b
1.8.5 < 1.8.5_p2
2.9.11_pre20051101-r3 > 2.9.11_pre20051101
0.9.28-r2 < 0.9.28.1
0.9.28.1 < 087-r1
104-r11 > 104-r9
1.23-r1 > 1.23
7.0.17 < 7.0.174
1.3-r0 < 1.3.1-r0
1.3_pre1-r1 < 1.3.2
1.0_p10-r0 > 1.0_p9-r0
0.1.0_alpha_pre2 < 0.1.0_alpha
1.0.0_pre20191002222144-r0 < 1.0.0_pre20210530193627-r0
6.0_pre1 < 6.0
6.1_p1 > 6.1
`;

/** rpm, tests/rpmvercmp.at (RPMVERCMP(a, b, expected)) */
const RPM_ROWS = `
1.0, 1.0, 0
1.0, 2.0, -1
2.0.1, 2.0, 1
2.0.1a, 2.0.1, 1
5.5p1, 5.5p2, -1
5.5p1, 5.5p10, -1
10xyz, 10.1xyz, -1
xyz10, xyz10.1, -1
xyz.4, 8, -1
2, xyz.4, 1
5.6p1, 6.5p1, -1
6.0.rc1, 6.0, 1
10b2, 10a1, 1
10a2, 10b2, -1
1.0a, 1.0aa, -1
10.0001, 10.1, 0
10.0001, 10.0039, -1
4.999.9, 5.0, -1
20101121, 20101122, -1
2.0, 2_0, 0
a+, a_, 0
+a, _a, 0
_+, +_, 0
+, _, 0
1.0~rc1, 1.0, -1
1.0~rc1, 1.0~rc2, -1
1.0~rc1~git123, 1.0~rc1, -1
1.0, 1.0~rc1, 1
`;

const rows = (text: string, split: RegExp) =>
  text
    .trim()
    .split("\n")
    .map((line) => line.split(split).map((part) => part.trim()));

describe("dpkg's order", () => {
  for (const [a, b, expected] of rows(DPKG_ROWS, / /)) {
    test(`${a} vs ${b} is ${expected}`, () => {
      expect(compareDpkg(a!, b!)).toBe(Number(expected));
      expect(compareDpkg(b!, a!)).toBe(-Number(expected) || 0);
    });
  }
});

describe("apk's order", () => {
  const answer: Record<string, number> = { "<": -1, "=": 0, ">": 1 };
  for (const [a, op, b] of rows(APK_ROWS, / /)) {
    test(`${a} ${op} ${b}`, () => {
      expect(compareApk(a!, b!)).toBe(answer[op!]!);
      expect(compareApk(b!, a!)).toBe(-answer[op!]! || 0);
    });
  }
});

describe("rpm's order", () => {
  for (const [a, b, expected] of rows(RPM_ROWS, /,/)) {
    test(`rpmvercmp(${a}, ${b}) is ${expected}`, () => {
      expect(rpmvercmp(a!, b!)).toBe(Number(expected));
      expect(rpmvercmp(b!, a!)).toBe(-Number(expected) || 0);
    });
  }
  test("the epoch comes first, then the version, then the release", () => {
    expect(compareRpmEvr("1:1.0-1", "2.0-1")).toBe(1);
    expect(compareRpmEvr("3.0.7-27.el9", "3.0.7-28.el9")).toBe(-1);
    expect(compareRpmEvr("0:3.0.7-27.el9", "3.0.7-27.el9")).toBe(0);
  });
});
