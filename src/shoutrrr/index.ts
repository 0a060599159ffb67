/**
 * Notification URLs as shoutrrr reads them (`notifications.urls`): the grammar of each service's
 * URL, the target it names, its secret parts and the URL shown with them masked. A leaf under
 * config: it imports only leaves (the log room's mask, loopback.ts), so the schema validates every
 * URL at load and the notify room delivers to the parsed target, neither importing the other.
 *
 * urls.ts parses a URL by its scheme with the parser of its service (chat.ts, push.ts, smtp.ts,
 * generic.ts), each reading its parameters through grammar.ts; targets.ts holds what they answer,
 * services.ts each service once (its form, ignored parameters, fixed host and parser); mask.ts rebuilds a URL with its secrets masked (credentials.ts says
 * what is a credential, for the notify room's redactor too); base-url.ts reads
 * `notifications.services_base_url`. docs/notifications.md lists every service and its parameters.
 */

export { type BaseUrls, parseServicesBaseUrl } from "./base-url.ts";
export { credentialOf, isCredentialName, looksLikeToken } from "./credentials.ts";
export { FIXED_HOSTS, type FixedHostService, SERVICES, type UrlService } from "./services.ts";
export type { MqttTarget, NotificationTarget, SmtpTarget } from "./targets.ts";
export { notificationUrlSecrets, parseNotificationUrl, redactNotificationUrl, serviceOf } from "./urls.ts";
