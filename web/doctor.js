// Doctor: what `pincer doctor` says about providers, agent groups and sessions, fetched live.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get } from '/web/api.js';

export function Doctor({ onError }) {
  const [report, setReport] = useState(null);
  const refresh = () => get('/v1/doctor').then(setReport, onError);
  useEffect(() => {
    refresh();
  }, []);
  return html`<section aria-label="Doctor">
    <div class="row">
      <h2 class="grow">Doctor</h2>
      <button onClick=${refresh}>Check again</button>
    </div>
    ${
      report === null
        ? html`<p class="muted">Checking…</p>`
        : html`<p class=${report.failures > 0 ? 'error' : 'ok'}>
              ${report.failures > 0 ? `${report.failures} cannot start:` : 'every agent group and session can start'}
            </p>
            ${
              (report.problems ?? []).length > 0 &&
              html`<ul class="error" aria-label="Problems">
                ${report.problems.map((line) => html`<li>${line}</li>`)}
              </ul>`
            }
            <pre class="log" tabindex="0">${report.text}</pre>`
    }
  </section>`;
}
