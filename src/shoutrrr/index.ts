/**
 * Notification URLs as shoutrrr reads them (`notifications.urls`): the grammar of each service's
 * URL, the target it names, its secret parts and the URL shown with them masked. A leaf under
 * config: it imports only the log room's mask, so the schema validates every URL at load and the
 * notify room delivers to the parsed target, neither importing the other for it.
 * docs/notifications.md lists every service and its parameters.
 */
export { notificationUrlSecrets, parseNotificationUrl, redactNotificationUrl, serviceOf, URL_FORMS } from "./urls.ts";
export type { MqttTarget, NotificationTarget, SmtpTarget, UrlService } from "./urls.ts";
export { FIXED_HOSTS, parseServicesBaseUrl, type BaseUrls, type FixedHostService } from "./base-url.ts";
