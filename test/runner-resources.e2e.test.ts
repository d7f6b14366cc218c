import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { promptText, recorded, recordFile } from './support/mock-record.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

function write(root: string, file: string, text: string): void {
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
}

describe('resource packages in the runner', () => {
  it('turns a prompt into a slash command and skills into the system prompt', async () => {
    const s = createTestSession();
    write(s.paths.agent, 'CLAUDE.md', 'You are helpful.');
    write(s.paths.agent, 'prompts/review.md', '---\ndescription: Review a file\n---\nPlease review $ARGUMENTS & report.');
    write(s.paths.agent, 'skills/pdf/SKILL.md', '---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.');
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    await runner.ready();
    expect(runner.stderr()).toContain('[runner] resources: 1 skill (pdf) from convention, 1 prompt (/review) from convention\n');

    const { id } = s.chat('/review src/app.ts');
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    const [query] = recorded(s);
    // The expanded template is the user's message: escaped and attributed like any other.
    expect(promptText(query!)).toContain('sender="alice"');
    expect(promptText(query!)).toContain('Please review src/app.ts &amp; report.</message>');
    expect(query!.systemPrompt).toMatch(/^You are helpful\./);
    expect(query!.systemPrompt).toContain('\n\n## Skills\nThese skills are installed.');
    expect(query!.systemPrompt).toContain(`- pdf: Work with PDF files (instructions: ${path.join(s.paths.agent, 'skills/pdf/SKILL.md')})`);
    await waitFor('the prompt command log line', () => runner.stderr().includes('[runner] prompt command /review in message'));

    // An unknown command is plain text.
    const other = s.chat('/unknown thing');
    await waitFor('completed', () => s.inbound(other.id).status === 'completed');
    expect(promptText(recorded(s)[1]!)).toContain('/unknown thing</message>');
    expect(await runner.stop()).toBe(0);
  });

  it('logs every resource problem at start-up', async () => {
    const s = createTestSession();
    write(s.paths.agent, 'package.json', JSON.stringify({ pincer: { skills: ['skills/missing'], prompts: ['prompts/*.txt'] } }));
    const runner = startRunner(s.paths.root);
    await runner.ready();
    expect(runner.stderr()).toContain('[runner] warn: resources: skills: "skills/missing" does not exist');
    expect(runner.stderr()).toContain('[runner] warn: resources: prompts: "prompts/*.txt" matched nothing');
    expect(await runner.stop()).toBe(0);
  });
});
