// Models: each agent group's published model catalogue (GET /v1/models) — its generation, the runtime its runners
// start with, and the models it can use now, with why the others cannot be used.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get } from '/web/api.js';

function price(model) {
  return model.price ? `$${model.price.input} / $${model.price.output}` : '';
}

function Group({ view }) {
  const [all, setAll] = useState(false);
  const shown = view.models.filter((m) => all || m.available || m.configured);
  return html`<article aria-label=${`Models of ${view.group}`}>
    <h3>
      ${view.group}
      <span class="muted"
        >${view.generation === null ? 'no generation published' : `generation ${view.generation}${view.stale ? ' (a newer one is being built)' : ''}`}</span
      >
    </h3>
    ${view.lastFailure && html`<p class="error">Last build failed: ${view.lastFailure.error}${view.generation === null ? '' : ` — generation ${view.generation} keeps serving`}</p>`}
    ${view.selection && html`<p class=${view.selection.ok ? '' : 'error'}>${view.selection.ok ? `Runtime ${view.selection.provider}: ${view.selection.reason}` : view.selection.message}</p>`}
    <p class="muted">Credentials: ${view.credentials.map((c) => `${c.name} (${c.source})`).join(', ') || 'none'}</p>
    <table>
      <thead>
        <tr>
          <th>model</th>
          <th>runtime</th>
          <th>API</th>
          <th>context</th>
          <th>price per Mtok (in / out)</th>
          <th>status</th>
        </tr>
      </thead>
      <tbody>
        ${shown.map(
          (m) =>
            html`<tr>
              <td>${m.ref}${m.configured ? ' (configured)' : ''}</td>
              <td>${m.harness ?? ''}</td>
              <td>${m.api ?? ''}</td>
              <td>${m.contextWindow ? `${Math.round(m.contextWindow / 1000)}k` : ''}</td>
              <td>${price(m)}</td>
              <td class=${m.available ? 'ok' : 'error'}>${m.available ? 'available' : m.unavailable}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <label><input type="checkbox" checked=${all} onChange=${(e) => setAll(e.currentTarget.checked)} /> show the models it cannot use</label>
  </article>`;
}

export function Models({ onError }) {
  const [groups, setGroups] = useState(null);
  const refresh = () => get('/v1/models').then((body) => setGroups(body.groups), onError);
  useEffect(() => {
    refresh();
  }, []);
  return html`<section aria-label="Models">
    <div class="row">
      <h2 class="grow">Models</h2>
      <button onClick=${refresh}>Refresh</button>
    </div>
    ${groups === null ? html`<p class="muted">Loading…</p>` : groups.length === 0 ? html`<p class="muted">No agent group to show.</p>` : groups.map((view) => html`<${Group} view=${view} />`)}
  </section>`;
}
