// Usage: tokens and cost per day and per model, per agent group against its budgets, as bar charts drawn in SVG.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get } from '/web/api.js';

const fmt = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(Math.round(n)));
const usd = (n) => (n === null || n === undefined ? 'unknown' : `$${Number(n).toFixed(n >= 1 ? 2 : 4)}`);
const tokensOf = (row) => (row.inputTokens ?? 0) + (row.outputTokens ?? 0) + (row.cacheReadTokens ?? 0) + (row.cacheWriteTokens ?? 0);

/**
 * A horizontal bar chart: one row per entry, its key, its bar and its value. HTML rather than SVG, so a long key or
 * value wraps instead of running past the chart's edge, at any width (a phone stacks the key above the bar).
 */
export function BarChart({ title, rows, value, label }) {
  const max = Math.max(0, ...rows.map(value)) || 1;
  return html`<figure class="card">
    <figcaption><strong>${title}</strong></figcaption>
    ${
      rows.length === 0
        ? html`<p class="muted">No usage recorded yet.</p>`
        : html`<ul class="chart" aria-label=${title}>
            ${rows.map(
              (row) =>
                html`<li key=${row.key} class="chart-row">
                  <span class="chart-key">${row.key}</span>
                  <span class="chart-bar">
                    <span class="bar" style=${{ width: `${Math.max(0.5, (value(row) / max) * 100)}%` }}></span>
                    <span class="chart-value">${label(row)}</span>
                  </span>
                </li>`,
            )}
          </ul>`
    }
  </figure>`;
}

export function Usage({ onError }) {
  const [byDay, setByDay] = useState(null);
  const [byModel, setByModel] = useState(null);
  const [byGroup, setByGroup] = useState(null);
  useEffect(() => {
    get('/v1/usage?by=day&since=30d').then((r) => setByDay(r.rows), onError);
    get('/v1/usage?by=model&since=30d').then((r) => setByModel(r.rows), onError);
    Promise.all([get('/v1/usage?by=group&since=30d'), get('/v1/budgets').catch(() => ({ budgets: [] }))]).then(
      ([usage, { budgets }]) => setByGroup({ rows: usage.rows, budgets }),
      onError,
    );
  }, []);
  if (!byDay || !byModel || !byGroup) return html`<p class="muted">Loading usage…</p>`;
  return html`<section aria-label="Usage">
    <h2>Usage, last 30 days</h2>
    <${BarChart}
      title="Tokens per day"
      rows=${[...byDay].sort((a, b) => String(a.key).localeCompare(String(b.key)))}
      value=${tokensOf}
      label=${(r) => `${fmt(tokensOf(r))} tokens · ${usd(r.costUsd)}`}
    />
    <${BarChart}
      title="Cost per model (USD)"
      rows=${byModel.map((r) => ({ ...r, key: r.key ?? 'unknown model' }))}
      value=${(r) => r.costUsd ?? 0}
      label=${(r) => `${usd(r.costUsd)} · ${fmt(tokensOf(r))} tokens`}
    />
    <h2>Agent groups and budgets</h2>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>group</th>
            <th>tokens (30 days)</th>
            <th>cost (30 days)</th>
            <th>budgets</th>
          </tr>
        </thead>
        <tbody>
          ${byGroup.rows.map(
            (r) =>
              html`<tr key=${r.key}>
                <td>${r.key}</td>
                <td>${fmt(tokensOf(r))}</td>
                <td>${usd(r.costUsd)}</td>
                <td>
                  ${byGroup.budgets.filter((b) => b.group === r.key).map((b) => html`<div>${b.period}: ${b.unit === 'usd' ? usd(b.amount) : `${fmt(b.amount)} tokens`}</div>`)}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}
