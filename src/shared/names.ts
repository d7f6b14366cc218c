/**
 * The rules for names that reach prompts and headers from outside, one function per kind of name, used by every entry
 * point that takes one:
 * - a webhook source (`POST /v1/webhooks/<source>`, `pincer webhook add <name>`): 1–64 of `A-Z a-z 0-9 . _ -`;
 * - a webhook event (`?event=`, `X-Pincer-Event`, `X-GitHub-Event`, a Stripe payload's `type`): 1–100 of letters,
 *   digits and `_ . : / -`.
 * No spaces, no line breaks: nothing in them can start a line of its own in a prompt.
 */
const SOURCE = /^[A-Za-z0-9._-]{1,64}$/;
const EVENT = /^[A-Za-z0-9_.:/-]{1,100}$/;

/** Why `value` is not a webhook source name, or undefined when it is. */
export function webhookSourceProblem(value: string): string | undefined {
  return SOURCE.test(value) ? undefined : `webhook name ${shown(value)}: use 1–64 of A-Z a-z 0-9 . _ -`;
}

/** Why `value` is not a webhook event name, or undefined when it is. */
export function webhookEventProblem(value: string): string | undefined {
  return EVENT.test(value) ? undefined : `webhook event ${shown(value)}: use 1–100 of A-Z a-z 0-9 _ . : / -`;
}

function shown(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}
