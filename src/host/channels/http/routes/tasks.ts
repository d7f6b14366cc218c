import type { Context } from 'hono';
import type { TaskSummary } from '../../../tasks.js';
import { canSee, requireAdmin } from '../auth.js';
import { conversationId, readJson, validate } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import { TaskChangeSchema } from '../../../../db/tasks.js';
import type { HttpEnv, HttpRouteModule } from '../types.js';

/**
 * Scheduled tasks of every session: list, get, pause, resume, change, cancel. A task is addressed by the id that
 * scheduling it returned (its series id, stable across the occurrences of a recurring task). Scheduling stays at
 * `POST /v1/conversations/<id>/tasks`. A token limited to some conversations sees only their tasks; any other task
 * is a 404 to it, as if it did not exist.
 */

const PatchTask = TaskChangeSchema.strict().refine((body) => Object.values(body).some((v) => v !== undefined), {
  message: 'nothing to change: give prompt, processAfter, recurrence or script',
});

export const taskRoutes: HttpRouteModule = ({ api }, { host }) => {
  /** The task, if the caller may see it; 404 otherwise. */
  const visibleTask = async (c: Context<HttpEnv>): Promise<TaskSummary> => {
    const task = await host.tasks.get(c.req.param('id') ?? '');
    if (!canSee(c.get('principal'), task.channelType, task.conversation)) throw new PincerError('not-found', `no active task "${task.id}"`);
    return task;
  };

  api.get('/v1/tasks', async (c) => {
    const conversation = c.req.query('conversation');
    if (conversation !== undefined) conversationId(conversation);
    const tasks = (await host.tasks.list())
      .filter((t) => canSee(c.get('principal'), t.channelType, t.conversation))
      .filter((t) => conversation === undefined || (t.channelType === 'http' && t.conversation === conversation));
    return c.json({ tasks });
  });

  api.get('/v1/tasks/:id', async (c) => c.json(await visibleTask(c)));

  api.post('/v1/tasks/:id/pause', async (c) => c.json(await host.tasks.change((await visibleTask(c)).id, { op: 'pause' })));
  api.post('/v1/tasks/:id/resume', async (c) => c.json(await host.tasks.change((await visibleTask(c)).id, { op: 'resume' })));
  api.post('/v1/tasks/:id/cancel', async (c) => {
    const { id } = await visibleTask(c);
    await host.tasks.change(id, { op: 'cancel', by: 'http' });
    return c.json({ id, status: 'cancelled' });
  });

  api.patch('/v1/tasks/:id', async (c) => {
    const { id } = await visibleTask(c);
    const change = validate(PatchTask, await readJson(c));
    // "" removes a recurrence or a script, like null.
    const recurrence = change.recurrence === '' ? null : change.recurrence;
    const script = change.script === '' ? null : change.script;
    if (typeof script === 'string') requireAdmin(c, 'a task script');
    return c.json(await host.tasks.change(id, { op: 'update', ...change, recurrence, script }));
  });
};
