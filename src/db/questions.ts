import type Database from 'better-sqlite3';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import { describeIssues, QuestionResponseSchema } from './content.js';
import { insertInbound } from './messages.js';
import { getSessionValue, setSessionValue } from './state.js';

/**
 * Whether anyone still waits for the answer to a question. The MCP server's `ask_user_question` waits until the
 * `expiresAt` it writes into the question's row; a runner start closes every question asked before it (the MCP server
 * that waited died with the old runner). An answer to a closed question would never be read, so it is written as a
 * chat message the agent sees instead (`insertAnswer`). Both the check and the write are one transaction, and the MCP
 * server reads the answer one last time after its deadline, so an answer is either taken by the question or becomes a
 * message, never neither.
 */
const CLOSED_BEFORE_KEY = 'questions:closed_before';

const QUESTION_ROW = `SELECT timestamp, json_extract(content, '$.expiresAt') AS expires_at, json_extract(content, '$.title') AS title
  FROM messages_out WHERE kind = 'chat' AND json_valid(content)
    AND json_extract(content, '$.operation') = 'ask_question' AND json_extract(content, '$.questionId') = ?
  ORDER BY seq DESC LIMIT 1`;

export interface AnswerRouting {
  channelType: string;
  platformId: string;
  threadId: string | null;
}

export interface Answer {
  questionId: string;
  selectedOption: string;
  userId?: string;
}

/**
 * Write the answer to a question: as a `question_response` while the question is open, else (it timed out, or its
 * runner stopped) as a chat message telling the agent the late answer. Returns the row and whether it came late.
 */
export function insertAnswer(db: Database.Database, answer: Answer, routing: AnswerRouting): { id: string; seq: number; late: boolean } {
  const write = db.transaction(() => {
    const question = prepared(db, QUESTION_ROW).get(answer.questionId) as { timestamp: string; expires_at: string | null; title: string | null } | undefined;
    const now = isoNow();
    const closedBefore = getSessionValue(db, CLOSED_BEFORE_KEY);
    const late =
      question !== undefined &&
      ((question.expires_at !== null && question.expires_at < now) || (closedBefore !== undefined && question.timestamp < closedBefore));
    if (!late) {
      const content = {
        type: 'question_response',
        questionId: answer.questionId,
        selectedOption: answer.selectedOption,
        ...(answer.userId ? { userId: answer.userId } : {}),
      };
      return { ...insertInbound(db, { kind: 'system', content, ...routing }), late };
    }
    const text = `My answer to your earlier question${question.title ? ` "${question.title}"` : ''} (it came after the question had closed): ${answer.selectedOption}`;
    const content = { text, sender: answer.userId ?? 'user', ...(answer.userId ? { senderId: answer.userId } : {}), lateAnswerTo: answer.questionId };
    return { ...insertInbound(db, { kind: 'chat', content, ...routing }), late };
  });
  return write.immediate();
}

/**
 * At runner start: no question asked before now has anyone waiting. Answers that arrived for them and were never
 * taken become chat messages, so the agent sees them.
 */
export function closeQuestionsAsked(db: Database.Database): number {
  const close = db.transaction(() => {
    setSessionValue(db, CLOSED_BEFORE_KEY, isoNow());
    const orphans = prepared(
      db,
      `SELECT id, content FROM messages_in WHERE status = 'pending' AND kind = 'system' AND json_valid(content)
         AND json_extract(content, '$.type') = 'question_response'`,
    ).all() as { id: string; content: string }[];
    const update = prepared(db, `UPDATE messages_in SET kind = 'chat', content = ? WHERE id = ?`);
    for (const row of orphans) {
      const answer = JSON.parse(row.content) as { questionId?: unknown; selectedOption?: unknown; userId?: unknown };
      const userId = typeof answer.userId === 'string' ? answer.userId : undefined;
      const text = `My answer to your earlier question (it came after the question had closed): ${String(answer.selectedOption)}`;
      update.run(JSON.stringify({ text, sender: userId ?? 'user', ...(userId ? { senderId: userId } : {}), lateAnswerTo: String(answer.questionId) }), row.id);
    }
    return orphans.length;
  });
  return close.immediate();
}

const FIND_ANSWER = `SELECT id, content FROM messages_in
  WHERE status = 'pending' AND kind = 'system'
    AND CASE WHEN json_valid(content) THEN coalesce(json_extract(content, '$.type') = 'question_response'
      AND json_extract(content, '$.questionId') = @questionId, 0) ELSE 0 END
  ORDER BY seq LIMIT 1`;

/**
 * Claim the answer row, if it has arrived: mark it completed in the same transaction that reads it, so an answer is
 * taken once. An answer row that is not a valid question_response is failed with the reason, never silently ignored.
 */
export function takeAnswer(db: Database.Database, questionId: string): string | undefined {
  const take = db.transaction((): string | undefined => {
    const row = prepared(db, FIND_ANSWER).get({ questionId }) as { id: string; content: string } | undefined;
    if (!row) return undefined;
    const parsed = QuestionResponseSchema.safeParse(JSON.parse(row.content));
    const now = isoNow();
    if (!parsed.success) {
      prepared(db, `UPDATE messages_in SET status = 'failed', status_changed = ?, last_error = ? WHERE id = ?`).run(
        now,
        `invalid answer to question ${questionId}: ${describeIssues(parsed.error)}`,
        row.id,
      );
      return undefined;
    }
    prepared(db, `UPDATE messages_in SET status = 'completed', status_changed = ? WHERE id = ?`).run(now, row.id);
    return parsed.data.selectedOption;
  });
  return take.immediate();
}
