/**
 * A runner in a sandbox without a network of its own (bubblewrap's and Docker's default) reaches its model only
 * through the host's credential proxy; anything else it would fetch itself — an attachment's `url` — fails with a
 * bare socket error. The launcher says so in this variable, whose value is the setting that gives the sandbox a
 * network, so a failure can name it.
 */
export const NO_NETWORK_ENV = 'PINCER_SANDBOX_NO_NETWORK';
