// The Pincer control page: log in with a token (the host sets an HttpOnly session cookie), then conversations,
// sessions, tasks, usage and the doctor. Preact + htm as plain ES modules: no build step, nothing fetched from
// elsewhere, and no inline script (the page is served with a strict Content-Security-Policy).
import { html, render, useEffect, useState } from '/web/vendor/preact-htm.js';
import { get, post } from '/web/api.js';
import { Conversations } from '/web/chat.js';
import { Doctor } from '/web/doctor.js';
import { McpServers } from '/web/mcp-servers.js';
import { Models } from '/web/models.js';
import { Sessions } from '/web/sessions.js';
import { Tasks } from '/web/tasks.js';
import { Usage } from '/web/usage.js';

const VIEWS = {
  conversations: ['Conversations', Conversations],
  sessions: ['Sessions', Sessions],
  tasks: ['Tasks', Tasks],
  usage: ['Usage', Usage],
  models: ['Models', Models],
  mcp: ['MCP servers', McpServers],
  doctor: ['Doctor', Doctor],
};

function Login({ onLogin }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    try {
      onLogin(await post('/v1/login', { token: token.trim() }));
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card login" onSubmit=${submit} aria-label="Log in">
    <h1>Pincer</h1>
    <label for="token">Access token</label>
    <input id="token" type="password" autocomplete="current-password" value=${token} onInput=${(e) => setToken(e.target.value)} required />
    <p class="muted">
      The admin token is in the <code>http-token</code> file of the host's home; <code>pincer token create</code> makes tokens limited to some conversations.
    </p>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <button class="primary" type="submit">Log in</button>
  </form>`;
}

function App() {
  const [who, setWho] = useState(undefined);
  const [view, setView] = useState(location.hash.slice(1) in VIEWS ? location.hash.slice(1) : 'conversations');
  const [error, setError] = useState('');
  useEffect(() => {
    get('/v1/whoami').then(setWho, () => setWho(null));
  }, []);
  useEffect(() => {
    location.hash = view;
  }, [view]);
  const onError = (err) => {
    if (err.status === 401) setWho(null);
    setError(err.message);
  };
  if (who === undefined) return html`<p class="muted">Loading…</p>`;
  if (who === null)
    return html`<${Login}
      onLogin=${(w) => {
        setWho(w);
        setError('');
      }}
    />`;
  const [, View] = VIEWS[view];
  const logout = () => post('/v1/logout').finally(() => setWho(null));
  return html`<header>
      <h1>Pincer</h1>
      <nav aria-label="Views">
        ${Object.entries(VIEWS).map(([key, [label]]) => html`<button aria-current=${view === key ? 'page' : undefined} onClick=${() => setView(key)}>${label}</button>`)}
      </nav>
      <span class="muted grow">${who.admin ? 'admin' : `token ${who.name}`}</span>
      <button onClick=${logout}>Log out</button>
    </header>
    ${error ? html`<p class="error" role="alert">${error} <button onClick=${() => setError('')} aria-label="Dismiss the error">×</button></p>` : null}
    <${View} key=${view} onError=${onError} />`;
}

render(html`<${App} />`, document.getElementById('app'));
