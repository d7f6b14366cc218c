// Sessions and their runners: state, provider and why it was chosen, heartbeat age, last error, queue depth; stop
// or restart a runner; the tail of its log.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get, post } from '/web/api.js';

const age = (iso) => {
  if (!iso) return '—';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
};

export function Sessions({ onError }) {
  const [sessions, setSessions] = useState([]);
  const [log, setLog] = useState(null);
  const [reasons, setReasons] = useState({});
  const refresh = () => get('/v1/sessions').then((r) => setSessions(r.sessions), onError);
  useEffect(() => {
    refresh();
    // Why each session's provider was chosen: the doctor's reasoning (admins only; others just see the provider).
    get('/v1/doctor').then(
      (r) => setReasons(Object.fromEntries(r.sessions.map((s) => [s.id, s]))),
      () => undefined,
    );
    const timer = setInterval(refresh, 3000);
    return () => clearInterval(timer);
  }, []);
  const act = (id, what) => post(`/v1/sessions/${encodeURIComponent(id)}/${what}`).then(refresh, onError);
  const showLog = (id) => get(`/v1/sessions/${encodeURIComponent(id)}/log?lines=200`).then((r) => setLog({ id, text: r.lines.join('\n') }), onError);
  return html`<section aria-label="Sessions">
    <h2>Sessions</h2>
    ${sessions.length === 0 ? html`<p class="muted">No sessions yet: send a message to create one.</p>` : null}
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>conversation</th>
            <th>group</th>
            <th>runner</th>
            <th>provider</th>
            <th>heartbeat</th>
            <th>queue</th>
            <th>last error</th>
            <th>actions</th>
          </tr>
        </thead>
        <tbody>
          ${sessions.map(
            (s) =>
              html`<tr key=${s.id}>
                <td>${s.channelType}:${s.platformId}${s.threadKey ? ` / ${s.threadKey}` : ''}</td>
                <td>${s.agentGroup}</td>
                <td>${s.runner ? s.runner.state : 'stopped'}</td>
                <td>
                  ${s.provider ?? reasons[s.id]?.provider ?? '—'}${reasons[s.id]?.reason ? html`<br /><span class="muted">${reasons[s.id].reason}</span>` : null}
                </td>
                <td>${age(s.heartbeatAt)}</td>
                <td>${s.pending}</td>
                <td class=${s.lastError ? 'error' : ''}>${s.lastError ?? ''}</td>
                <td>
                  <div class="row">
                    <button onClick=${() => act(s.id, 'stop')} disabled=${!s.runner} aria-label=${`Stop the runner of ${s.platformId}`}>Stop</button>
                    <button onClick=${() => act(s.id, 'restart')} aria-label=${`Restart the runner of ${s.platformId}`}>Restart</button>
                    <button onClick=${() => showLog(s.id)} aria-label=${`Show the log of ${s.platformId}`}>Log</button>
                  </div>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${
      log
        ? html`<h2>Log of ${log.id}</h2>
            <pre class="log" tabindex="0">${log.text || '(empty)'}</pre>`
        : null
    }
  </section>`;
}
