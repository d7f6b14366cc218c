// Scheduled tasks: next run and last result; pause, resume, edit, cancel, run now.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get, patch, post } from '/web/api.js';

export function Tasks({ onError }) {
  const [tasks, setTasks] = useState([]);
  const [editing, setEditing] = useState(null);
  const refresh = () => get('/v1/tasks').then((r) => setTasks(r.tasks), onError);
  useEffect(() => {
    refresh();
    const timer = setInterval(refresh, 5000);
    return () => clearInterval(timer);
  }, []);
  const act = (id, what) => post(`/v1/tasks/${encodeURIComponent(id)}/${what}`).then(refresh, onError);
  const runNow = (id) => patch(`/v1/tasks/${encodeURIComponent(id)}`, { processAfter: new Date().toISOString() }).then(refresh, onError);
  const save = (e) => {
    e.preventDefault();
    const { id, prompt, recurrence } = editing;
    patch(`/v1/tasks/${encodeURIComponent(id)}`, { prompt, recurrence: recurrence.trim() === '' ? null : recurrence.trim() }).then(() => {
      setEditing(null);
      refresh();
    }, onError);
  };
  return html`<section aria-label="Tasks">
    <h2>Scheduled tasks</h2>
    ${tasks.length === 0 ? html`<p class="muted">No active tasks. The agent schedules them with its tools, or POST /v1/conversations/${'<id>'}/tasks.</p>` : null}
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>task</th>
            <th>conversation</th>
            <th>schedule</th>
            <th>next run</th>
            <th>status</th>
            <th>last result</th>
            <th>actions</th>
          </tr>
        </thead>
        <tbody>
          ${tasks.map(
            (t) =>
              html`<tr key=${t.id}>
                <td>${t.prompt}</td>
                <td>${t.channelType}:${t.conversation}</td>
                <td>${t.recurrence ?? 'once'}</td>
                <td>${t.processAfter ? new Date(t.processAfter).toLocaleString() : 'now'}</td>
                <td>${t.status}</td>
                <td>${t.lastResult ?? t.lastError ?? ''}</td>
                <td>
                  <div class="row">
                    ${
                      t.status === 'paused'
                        ? html`<button onClick=${() => act(t.id, 'resume')} aria-label=${`Resume ${t.prompt}`}>Resume</button>`
                        : html`<button onClick=${() => act(t.id, 'pause')} aria-label=${`Pause ${t.prompt}`}>Pause</button>`
                    }
                    <button onClick=${() => runNow(t.id)} aria-label=${`Run ${t.prompt} now`}>Run now</button>
                    <button onClick=${() => setEditing({ id: t.id, prompt: t.prompt, recurrence: t.recurrence ?? '' })} aria-label=${`Edit ${t.prompt}`}>
                      Edit
                    </button>
                    <button onClick=${() => act(t.id, 'cancel')} aria-label=${`Cancel ${t.prompt}`}>Cancel</button>
                  </div>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${
      editing
        ? html`<form class="card" onSubmit=${save} aria-label="Edit task">
            <label for="task-prompt">Prompt</label>
            <textarea id="task-prompt" rows="2" value=${editing.prompt} onInput=${(e) => setEditing({ ...editing, prompt: e.target.value })}></textarea>
            <label for="task-recurrence">Cron schedule (empty: once)</label>
            <input id="task-recurrence" value=${editing.recurrence} onInput=${(e) => setEditing({ ...editing, recurrence: e.target.value })} />
            <div class="row">
              <button class="primary" type="submit">Save</button><button type="button" onClick=${() => setEditing(null)}>Cancel edit</button>
            </div>
          </form>`
        : null
    }
  </section>`;
}
