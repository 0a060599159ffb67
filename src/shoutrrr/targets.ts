/** What a notification URL names: each service's target, as svc delivers to it, and its secret parts. */

interface TargetBase {
  /** the secret parts of the URL, as written and decoded */
  secrets: string[];
}

export type NotificationTarget = TargetBase &
  (
    | { service: "discord"; webhookId: string; token: string; username?: string; avatarUrl?: string; threadId?: string }
    | { service: "telegram"; token: string; chats: TelegramChat[]; silent: boolean; preview: boolean }
    | {
        service: "slack";
        webhookPath?: string;
        botToken?: string;
        channel?: string;
        botname?: string;
        icon?: string;
        threadTs?: string;
      }
    | { service: "gotify"; endpoint: string; token: string; priority: number; skipTlsVerify: boolean }
    | {
        service: "ntfy";
        endpoint: string;
        topic: string;
        username?: string;
        password?: string;
        markdown: boolean;
        headers: Array<[string, string]>;
        skipTlsVerify: boolean;
      }
    | {
        service: "pushover";
        token: string;
        userKey: string;
        devices: string[];
        priority?: number;
        encryptionKey?: string;
      }
    | { service: "smtp"; smtp: SmtpTarget }
    | { service: "teams"; endpoint: string }
    | { service: "matrix"; endpoint: string; user?: string; password: string; rooms: string[] }
    | { service: "mattermost" | "rocketchat"; endpoint: string; username?: string; channel?: string; icon?: string }
    | { service: "googlechat"; endpoint: string }
    | { service: "pushbullet"; token: string; targets: string[] }
    | { service: "mqtt"; mqtt: MqttTarget }
    | { service: "signal"; endpoint: string; source: string; recipients: string[]; authorization?: string }
    | { service: "bark"; endpoint: string; deviceKey: string; fields: Record<string, string | number> }
    | ({
        service: "generic";
        endpoint: string;
        method: string;
        contentType?: string;
        headers: Array<[string, string]>;
      } & GenericBody)
  );

/** An MQTT broker and topic (the fork's `mqtt://` and `mqtts://`), published to by svc's MQTT channel. */
export interface MqttTarget {
  tls: boolean;
  host: string;
  port: number;
  topic: string;
  username?: string;
  password?: string;
  clientId?: string;
  qos: 0 | 1 | 2;
  retained: boolean;
  cleanSession: boolean;
  skipTlsVerify: boolean;
}

/** A Telegram chat (`@channel` or an id) and, after `:`, the topic (message thread) in it. */
export interface TelegramChat {
  chat: string;
  thread?: number;
}

/**
 * What a generic webhook is sent: the message text (no template), shoutrrr's JSON object
 * (`template=json`: the title and message under their keys, and the `$name` extra fields), or a
 * mustache file of svc's (any other template).
 */
export type GenericBody =
  | { body: "text" }
  | { body: "json"; titleKey: string; messageKey: string; extra: Array<[string, string]> }
  | { body: "template"; template: string };

export interface SmtpTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  from: string;
  fromName?: string;
  to: string[];
  /** shoutrrr's `auth`: none, plain, login, crammd5 (default plain when a user is given) */
  auth: "none" | "plain" | "login" | "crammd5";
  /** shoutrrr's `encryption`: auto (465 implicit TLS, else STARTTLS when offered), none, explicittls (STARTTLS required), implicittls */
  encryption: "auto" | "none" | "explicittls" | "implicittls";
  useStartTls: boolean;
  /** shoutrrr v0.17's `requirestarttls`: fail when the server does not offer STARTTLS */
  requireStartTls: boolean;
  /** the name svc gives itself in EHLO (`clienthost`) */
  clientHost?: string;
  subject?: string;
  skipTlsVerify: boolean;
}
