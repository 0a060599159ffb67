/**
 * What a row's Details and History show, in the info dialog (dialogs.ts): everything exact (digests,
 * times, the raw state and reason, as the API gives them), and what happened to it in the kept
 * history (GET /v1/history?container=NAME).
 */
import { apiOf, type TimelineEntry } from "./api.ts";
import { sayFailure } from "./data.ts";
import { infoDialog } from "./dialogs.ts";
import { h } from "./dom.ts";
import { GROUP_WORDS, localTime, outcomeWords, plainText, shortDigest } from "./format.ts";
import { labelOf, type Row } from "./store.ts";

/** Everything exact: digests, times, the raw state and reason, as the API gives them. */
export async function showDetails(c: Row): Promise<void> {
  const facts: [string, string | null][] = [
    ["Image", c.image],
    ["Running digest", c.current_digest],
    ["Available image", c.available_image],
    ["Available digest", c.available_digest],
    ["Compose file change", c.compose_change?.length ? c.compose_change.join("; ") : null],
    ["Built here, from", c.built_from?.length ? c.built_from.join(", ") : null],
    ["State", c.state],
    ["Reason", c.reason],
    ["New image first seen", c.first_seen_at && `${localTime(c.first_seen_at)} (${c.first_seen_at})`],
    ["New image built", c.created_at && `${localTime(c.created_at)} (${c.created_at})`],
    ["Eligible", c.eligible_at && `${localTime(c.eligible_at)} (${c.eligible_at})`],
    ["Snoozed until", c.snoozed_until && `${localTime(c.snoozed_until)} (${c.snoozed_until})`],
    ["Skipped", c.skipped],
    ["Rollback goes back to", c.previous_image_id],
    ["Group", c.group ? `${GROUP_WORDS[c.group.kind]} ${c.group.name}` : null],
    ["Signature", c.signature && signatureFact(c.signature)],
    ["Signature reason", c.signature?.reason ?? null],
  ];
  const shown = facts.filter((fact): fact is [string, string] => Boolean(fact[1]));
  await infoDialog.show(
    `Details of ${labelOf(c)}`,
    h("dl", { class: "details" }, ...shown.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
  );
}

/** `verified: signed by X (bundle, referrers API, sha256:...)`, as the report has it. */
function signatureFact(s: NonNullable<Row["signature"]>): string {
  const where = [s.format, s.found_in, s.digest].filter(Boolean).join(", ");
  const who = s.signer ? `: signed by ${s.signer}` : "";
  return `${s.status}${who}${where ? ` (${where})` : ""}; policy ${s.policy}`;
}

export async function showTimeline(c: Row): Promise<void> {
  try {
    const { timeline } = await apiOf(c.peer).timeline(c.name);
    await infoDialog.show(
      `History of ${labelOf(c)}`,
      timeline.length
        ? h("ol", { class: "timeline" }, ...timeline.map(timelineItem))
        : h("p", {}, "Nothing happened to it in the kept history (only fresh checks)."),
    );
  } catch (failure) {
    await sayFailure(failure);
  }
}

function timelineItem(entry: TimelineEntry): HTMLLIElement {
  const move = entry.to_version ? `${entry.from_version} → ${entry.to_version}` : entry.from_version;
  return h(
    "li",
    {},
    h("span", { class: "when", title: localTime(entry.at) }, localTime(entry.at)),
    ` · ${outcomeWords({ state: entry.state, reason: null })} · ${shortDigest(move)}`,
    entry.reason && h("span", { class: "reason", title: entry.reason }, plainText(entry.reason)),
  );
}
