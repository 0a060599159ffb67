/**
 * Which hosts are this machine: 127.0.0.0/8, ::1 and localhost. Plain http is allowed to them
 * alone, by the registry client and by services_base_url (docs/notifications.md).
 */

/** `hostname` without a port; IPv6 with or without brackets. */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Where this machine reaches a server listening on `address`: loopback for the wildcard addresses. */
export function reachableAddress(address: string): string {
  if (address === "0.0.0.0") return "127.0.0.1";
  if (address === "::") return "::1";
  return address;
}

/** An address as a URL's host: IPv6 in brackets. */
export function urlHost(address: string): string {
  return address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
}
