/**
 * The mosquitto ACL of docs/home-assistant.md, as the tests use it: the block as written, with
 * svc's report topic (`svc/reports`) replaced by the test's own.
 */
import { fencedBlocks } from "./doc-blocks.ts";

export function docsAcl(topic: string): string {
  const block = fencedBlocks("docs/home-assistant.md").find(
    (b) => b.language === "conf" && b.text.includes("user homeassistant"),
  );
  if (!block) throw new Error("docs/home-assistant.md has no conf block with the ACL");
  return `${block.text.replaceAll("svc/reports", topic)}\n`;
}
