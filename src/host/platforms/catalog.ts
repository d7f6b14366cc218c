import type { Adapter, Logger as ChatLogger } from 'chat';

/**
 * The chat platforms Pincer reaches through the Chat SDK, and when each is enabled. Each adapter reads its own
 * environment variables (as its README documents them); this catalog only decides from the same variables whether
 * the platform is configured, incomplete (some of its variables set, a required one missing: the host refuses to
 * start) or off, and how its events arrive. docs/platforms.md has one recipe per platform.
 */
export const PLATFORM_NAMES = ['telegram', 'slack', 'discord', 'whatsapp', 'github'] as const;
export type PlatformName = (typeof PLATFORM_NAMES)[number];

/** How a platform's events reach the host. */
export type InboundMode = 'polling' | 'webhook' | 'socket';

export type PlatformStatus = { state: 'off' } | { state: 'incomplete'; missing: string } | { state: 'on'; inbound: InboundMode; detail: string };

export interface PlatformSpec {
  name: PlatformName;
  title: string;
  /** the longest text one platform message carries; longer answers are split. */
  textLimit: number;
  /** whether to show "typing" while the agent works (Slack's indicator exists only in assistant threads). */
  typing: boolean;
  /** what to set to enable it (for `pincer doctor`). */
  enable: string;
  /** every environment variable the adapter reads (all kept away from runners: they hold platform secrets). */
  variables: readonly string[];
  status(env: NodeJS.ProcessEnv): PlatformStatus;
  /** Build the adapter (its package is imported only here, so a host without platforms never loads the SDK). */
  create(env: NodeJS.ProcessEnv, logger: ChatLogger): Promise<Adapter>;
}

const set = (env: NodeJS.ProcessEnv, name: string): boolean => (env[name] ?? '').trim() !== '';

/** `on` when every variable of `required` is set, `incomplete` when one of `intent` is set but a required one is not. */
function byVariables(env: NodeJS.ProcessEnv, required: readonly string[], intent: readonly string[], on: () => PlatformStatus): PlatformStatus {
  const missing = required.filter((name) => !set(env, name));
  if (missing.length === 0) return on();
  if (intent.some((name) => set(env, name))) return { state: 'incomplete', missing: missing.join(', ') };
  return { state: 'off' };
}

export const PLATFORMS: readonly PlatformSpec[] = [
  {
    name: 'telegram',
    title: 'Telegram',
    typing: true,
    textLimit: 4096,
    enable: 'TELEGRAM_BOT_TOKEN',
    variables: ['TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET_TOKEN', 'TELEGRAM_API_BASE_URL', 'TELEGRAM_BOT_USERNAME', 'TELEGRAM_ALLOWED_USER_IDS'],
    status: (env) =>
      byVariables(env, ['TELEGRAM_BOT_TOKEN'], ['TELEGRAM_BOT_TOKEN'], () =>
        set(env, 'TELEGRAM_WEBHOOK_SECRET_TOKEN')
          ? { state: 'on', inbound: 'webhook', detail: 'webhook if one is set with Telegram (secret token checked), else long polling' }
          : { state: 'on', inbound: 'polling', detail: 'long polling (no public URL needed)' },
      ),
    async create(_env, logger) {
      const { createTelegramAdapter } = await import('@chat-adapter/telegram');
      // auto: polls with getUpdates unless a webhook is registered with Telegram (then POST /webhooks/telegram).
      return createTelegramAdapter({ mode: 'auto', logger });
    },
  },
  {
    name: 'slack',
    title: 'Slack',
    typing: false,
    textLimit: 12_000,
    enable: 'SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (or SLACK_APP_TOKEN for Socket Mode)',
    variables: ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_APP_TOKEN', 'SLACK_API_URL'],
    status(env) {
      if (set(env, 'SLACK_APP_TOKEN')) {
        return byVariables(env, ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN'], ['SLACK_APP_TOKEN'], () => ({
          state: 'on',
          inbound: 'socket',
          detail: 'Socket Mode (no public URL needed)',
        }));
      }
      return byVariables(env, ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET'], ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET'], () => ({
        state: 'on',
        inbound: 'webhook',
        detail: 'Events API webhook (signing secret checked)',
      }));
    },
    async create(env, logger) {
      const { createSlackAdapter } = await import('@chat-adapter/slack');
      return createSlackAdapter({
        mode: set(env, 'SLACK_APP_TOKEN') ? 'socket' : 'webhook',
        logger,
        // Retries and rate-limit waits belong to the host's delivery (which honours retry-after and tells the agent
        // of a final failure); the Web API client's own would hold a delivery for up to half an hour.
        webClientOptions: { retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
      });
    },
  },
  {
    name: 'discord',
    title: 'Discord',
    typing: true,
    textLimit: 2000,
    enable: 'DISCORD_BOT_TOKEN, DISCORD_PUBLIC_KEY and DISCORD_APPLICATION_ID',
    variables: ['DISCORD_BOT_TOKEN', 'DISCORD_PUBLIC_KEY', 'DISCORD_APPLICATION_ID', 'DISCORD_API_URL', 'DISCORD_MENTION_ROLE_IDS'],
    status: (env) =>
      byVariables(
        env,
        ['DISCORD_BOT_TOKEN', 'DISCORD_PUBLIC_KEY', 'DISCORD_APPLICATION_ID'],
        ['DISCORD_BOT_TOKEN', 'DISCORD_PUBLIC_KEY', 'DISCORD_APPLICATION_ID'],
        () => ({
          state: 'on',
          inbound: 'webhook',
          detail: 'interactions webhook (Ed25519 signature checked)',
        }),
      ),
    async create(_env, logger) {
      const { createDiscordAdapter } = await import('@chat-adapter/discord');
      return createDiscordAdapter({ logger });
    },
  },
  {
    name: 'whatsapp',
    title: 'WhatsApp',
    typing: false,
    textLimit: 4096,
    enable: 'WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_PHONE_NUMBER_ID and WHATSAPP_VERIFY_TOKEN',
    variables: ['WHATSAPP_ACCESS_TOKEN', 'WHATSAPP_APP_SECRET', 'WHATSAPP_PHONE_NUMBER_ID', 'WHATSAPP_VERIFY_TOKEN', 'WHATSAPP_API_URL'],
    status(env) {
      const required = ['WHATSAPP_ACCESS_TOKEN', 'WHATSAPP_APP_SECRET', 'WHATSAPP_PHONE_NUMBER_ID', 'WHATSAPP_VERIFY_TOKEN'];
      return byVariables(env, required, required, () => ({ state: 'on', inbound: 'webhook', detail: 'Cloud API webhook (x-hub-signature-256 checked)' }));
    },
    async create(_env, logger) {
      const { createWhatsAppAdapter } = await import('@chat-adapter/whatsapp');
      return createWhatsAppAdapter({ logger });
    },
  },
  {
    name: 'github',
    title: 'GitHub',
    typing: false,
    textLimit: 65_536,
    enable: 'GITHUB_WEBHOOK_SECRET and GITHUB_TOKEN (or GITHUB_APP_ID and GITHUB_PRIVATE_KEY)',
    variables: [
      'GITHUB_WEBHOOK_SECRET',
      'GITHUB_TOKEN',
      'GITHUB_APP_ID',
      'GITHUB_PRIVATE_KEY',
      'GITHUB_INSTALLATION_ID',
      'GITHUB_API_URL',
      'GITHUB_BOT_USERNAME',
    ],
    status(env) {
      // GITHUB_TOKEN alone is common in shells and CI; the webhook secret is what says "answer on GitHub".
      if (!set(env, 'GITHUB_WEBHOOK_SECRET')) return { state: 'off' };
      if (set(env, 'GITHUB_TOKEN') || (set(env, 'GITHUB_APP_ID') && set(env, 'GITHUB_PRIVATE_KEY'))) {
        return { state: 'on', inbound: 'webhook', detail: 'webhook (x-hub-signature-256 checked)' };
      }
      return { state: 'incomplete', missing: 'GITHUB_TOKEN (or GITHUB_APP_ID and GITHUB_PRIVATE_KEY)' };
    },
    async create(_env, logger) {
      const { createGitHubAdapter } = await import('@chat-adapter/github');
      return createGitHubAdapter({ logger });
    },
  },
];

export function platformSpec(name: string): PlatformSpec | undefined {
  return PLATFORMS.find((spec) => spec.name === name);
}

/** Every environment variable a platform adapter reads: removed from what runners inherit. */
export const PLATFORM_VARIABLES: readonly string[] = PLATFORMS.flatMap((spec) => spec.variables);

/** The platform variables that hold a secret (tokens, signing secrets, private keys). */
export const PLATFORM_SECRETS: readonly string[] = PLATFORM_VARIABLES.filter((name) => /TOKEN|SECRET|PRIVATE_KEY/.test(name));

/** The platforms configured in `env`, and those configured only in part (the host refuses to start with those). */
export function platformsIn(env: NodeJS.ProcessEnv): { enabled: { spec: PlatformSpec; inbound: InboundMode }[]; incomplete: string[] } {
  const enabled: { spec: PlatformSpec; inbound: InboundMode }[] = [];
  const incomplete: string[] = [];
  for (const spec of PLATFORMS) {
    const status = spec.status(env);
    if (status.state === 'on') enabled.push({ spec, inbound: status.inbound });
    if (status.state === 'incomplete') incomplete.push(`${spec.title} is configured in part: ${status.missing} missing (see docs/platforms.md)`);
  }
  return { enabled, incomplete };
}

/** One line per platform for `pincer doctor`: on (and how events arrive), off (what to set), or incomplete. */
export function describePlatforms(env: NodeJS.ProcessEnv): { lines: string[]; incomplete: number } {
  const width = Math.max(...PLATFORMS.map((spec) => spec.name.length));
  let incomplete = 0;
  const lines = PLATFORMS.map((spec) => {
    const status = spec.status(env);
    const name = spec.name.padEnd(width);
    if (status.state === 'off') return `  ${name}  off (set ${spec.enable})`;
    if (status.state === 'incomplete') {
      incomplete += 1;
      return `  ${name}  ✗ configured in part: ${status.missing} missing; the host will not start`;
    }
    const where = status.inbound === 'webhook' ? `; webhook URL: https://<public address of the --http listener>/webhooks/${spec.name}` : '';
    return `  ${name}  on: ${status.detail}${where}`;
  });
  return { lines, incomplete };
}
