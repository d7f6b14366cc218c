import type { z } from 'zod';

/** One line out of zod issues: `PINCER_IDLE_TIMEOUT_MS: expected number, received nan; …`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message)).join('; ');
}
