/**
 * What kind of failure a model error message is, for the runner's `last_error` and the host's retry decision. pi-ai
 * encodes every failure as text on the final assistant message (HTTP status and the server's message).
 */
export function classifyModelError(message: string): { retryable: boolean; classification: string } {
  const text = message.toLowerCase();
  if (/\b401\b|\b403\b|unauthori[sz]ed|authentication|invalid api key|permission/.test(text)) return { retryable: false, classification: 'auth' };
  if (/\b429\b|rate limit|quota|insufficient_quota|overloaded|\b529\b/.test(text)) return { retryable: true, classification: 'quota' };
  if (/context (window|length)|too long|too many tokens|maximum context|exceeds the/.test(text)) return { retryable: false, classification: 'context' };
  if (/econnrefused|econnreset|enotfound|etimedout|fetch failed|connection|socket|network|timed? ?out|\b5\d\d\b/.test(text)) {
    return { retryable: true, classification: 'transport' };
  }
  if (/\b400\b|\b404\b|\b422\b|invalid|not found/.test(text)) return { retryable: false, classification: 'request' };
  return { retryable: true, classification: 'model' };
}
