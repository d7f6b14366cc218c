// MCP servers: each agent group's own servers (GET /v1/mcp-servers), one added as JSON in the format of
// `pincer mcp-server add --json` (POST /v1/groups/<group>/mcp-servers) or removed (DELETE …/mcp-servers/<name>), each
// shown by the host's own one-line description, and the servers its agent asked for with the admin's decisions. One
// server per change, so two admins at work on one group do not undo each other. A change reaches each session at its
// next runner start.
import { html, useEffect, useState } from '/web/vendor/preact-htm.js';
import { api, get, post } from '/web/api.js';

const EXAMPLE = '{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}';

function Group({ view, onChange, onError }) {
  const [name, setName] = useState('');
  const [json, setJson] = useState('');
  const [problem, setProblem] = useState('');
  const group = `/v1/groups/${encodeURIComponent(view.group)}/mcp-servers`;
  const add = async (e) => {
    e.preventDefault();
    setProblem('');
    let server;
    try {
      server = JSON.parse(json);
    } catch (err) {
      setProblem(`not JSON: ${err.message}`);
      return;
    }
    try {
      await post(group, { name, server });
      setName('');
      setJson('');
      onChange();
    } catch (err) {
      setProblem(err.message);
    }
  };
  const remove = (server) =>
    api('DELETE', `${group}/${encodeURIComponent(server)}`)
      .then(onChange)
      .catch(onError);
  const entries = Object.entries(view.mcpServers);
  return html`<article aria-label=${`MCP servers of ${view.group}`}>
    <h3>${view.group}</h3>
    ${
      entries.length === 0
        ? html`<p class="muted">No MCP servers besides Pincer's.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>name</th>
                <th>runs</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${entries.map(
                ([server]) =>
                  html`<tr>
                    <td>${server}</td>
                    <td><code>${view.described[server]}</code></td>
                    <td><button aria-label=${`Remove ${server}`} onClick=${() => remove(server)}>Remove</button></td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <form class="row" onSubmit=${add} aria-label=${`Add an MCP server to ${view.group}`}>
      <input aria-label="Server name" placeholder="name" value=${name} onInput=${(e) => setName(e.currentTarget.value)} required />
      <input class="grow" aria-label="Server JSON" placeholder=${EXAMPLE} value=${json} onInput=${(e) => setJson(e.currentTarget.value)} required />
      <button type="submit">Add</button>
    </form>
    ${problem ? html`<p class="error" role="alert">${problem}</p>` : null}
    ${
      view.requests.length > 0 &&
      html`<h4>Asked for by the agent</h4>
        <table aria-label=${`Requests of ${view.group}`}>
          <thead>
            <tr>
              <th>when</th>
              <th>name</th>
              <th>runs</th>
              <th>why</th>
              <th>decision</th>
            </tr>
          </thead>
          <tbody>
            ${view.requests.map(
              (r) =>
                html`<tr>
                  <td>${new Date(r.requestedAt).toLocaleString()}</td>
                  <td>${r.name}</td>
                  <td><code>${r.described}</code></td>
                  <td>${r.reason}</td>
                  <td class=${r.status === 'approved' ? 'ok' : r.status === 'pending' ? 'muted' : 'error'}>
                    ${r.status}${r.decidedBy ? ` by ${r.decidedBy}` : ''}${r.error ? `: ${r.error}` : ''}
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>`
    }
  </article>`;
}

export function McpServers({ onError }) {
  const [groups, setGroups] = useState(null);
  const refresh = () => get('/v1/mcp-servers').then((body) => setGroups(body.groups), onError);
  useEffect(() => {
    refresh();
  }, []);
  return html`<section aria-label="MCP servers">
    <div class="row">
      <h2 class="grow">MCP servers</h2>
      <button onClick=${refresh}>Refresh</button>
    </div>
    <p class="muted">A group's own servers, next to Pincer's tools, for every provider; a change reaches each session at its next runner start.</p>
    ${groups === null ? html`<p class="muted">Loading…</p>` : groups.length === 0 ? html`<p class="muted">No agent group to show.</p>` : groups.map((view) => html`<${Group} view=${view} onChange=${refresh} onError=${onError} />`)}
  </section>`;
}
