/**
 * What a first visit of the dashboard may download, gzipped (page, script, style):
 * docs/dashboard.md, "Measured". The bench measures it as served; a unit test holds it on every change.
 */
export const FIRST_LOAD_BUDGET_KIB = 24;
