// Conversations: the list (with last activity) and a live chat view over the conversation's SSE stream: send text
// and files, see the agent's messages, edits and reactions as they happen, a line per tool call while the agent works,
// answer questions with their buttons.
import { html, useEffect, useRef, useState } from '/web/vendor/preact-htm.js';
import { fileToAttachment, get, openStream, post } from '/web/api.js';
import { Markdown } from '/web/markdown.js';

const CONVERSATION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export function Conversations({ onError }) {
  const [conversations, setConversations] = useState([]);
  const [current, setCurrent] = useState(null);
  const [newId, setNewId] = useState('');
  const refresh = () => get('/v1/conversations').then((r) => setConversations(r.conversations), onError);
  useEffect(() => {
    refresh();
    const timer = setInterval(refresh, 5000);
    return () => clearInterval(timer);
  }, []);
  const open = (e) => {
    e.preventDefault();
    const id = newId.trim();
    if (!CONVERSATION_ID.test(id)) return onError(new Error('a conversation id is 1–128 of A-Z a-z 0-9 . _ : @ -'));
    setCurrent(id);
    setNewId('');
  };
  // The open conversation is in the list (highlighted) even before the host lists it, i.e. before its first message.
  const listed = current && !conversations.some((c) => c.id === current) ? [{ id: current }, ...conversations] : conversations;
  return html`<div class="layout">
    <section aria-label="Conversations">
      <form onSubmit=${open}>
        <label for="new-conversation">Open a conversation</label>
        <div class="row">
          <input id="new-conversation" class="grow" value=${newId} placeholder="e.g. web" onInput=${(e) => setNewId(e.target.value)} />
          <button type="submit">Open</button>
        </div>
      </form>
      <h2>Conversations</h2>
      ${listed.length === 0 ? html`<p class="muted">None yet.</p>` : null}
      <ul class="list">
        ${listed.map(
          (c) =>
            html`<li key=${c.id}>
              <button aria-current=${current === c.id ? 'page' : undefined} onClick=${() => setCurrent(c.id)}>
                ${c.id}<br /><span class="muted">${c.lastEventAt ? `last ${new Date(c.lastEventAt).toLocaleString()}` : 'no answers yet'}</span>
              </button>
            </li>`,
        )}
      </ul>
    </section>
    ${current ? html`<${Chat} key=${current} conversation=${current} onError=${onError} onSent=${refresh} />` : html`<p class="muted">Pick or open a conversation.</p>`}
  </div>`;
}

function Chat({ conversation, onError, onSent }) {
  const [messages, setMessages] = useState([]);
  const [state, setState] = useState('connecting');
  const [typing, setTyping] = useState(false);
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const fileInput = useRef(null);
  const list = useRef(null);

  useEffect(
    () =>
      openStream(
        conversation,
        (type, data, id) => {
          if (type === 'typing') return setTyping(Boolean(data.active));
          if (type === 'reset') return setMessages([]);
          if (type === 'tool') return setMessages((all) => applyTool(all, data));
          setMessages((all) => applyEvent(all, type, data, id));
        },
        setState,
      ),
    [conversation],
  );
  useEffect(() => {
    if (list.current) list.current.scrollTop = list.current.scrollHeight;
  }, [messages.length]);

  const send = async (e) => {
    e.preventDefault();
    const files = [...(fileInput.current?.files ?? [])];
    if (text.trim() === '' && files.length === 0) return;
    setSending(true);
    try {
      const attachments = await Promise.all(files.map(fileToAttachment));
      const body = { text: text.trim() || '(attachment)', sender: 'web', ...(attachments.length ? { attachments } : {}) };
      const receipt = await post(`/v1/conversations/${encodeURIComponent(conversation)}/messages`, body);
      // shown at once; the stream's `sent` event for it (which may come first) is the same message
      setMessages((all) =>
        all.some((m) => m.key === `sent-${receipt.id}`)
          ? all
          : [...all, { key: `sent-${receipt.id}`, mine: true, text: body.text, files: files.map((f) => f.name) }],
      );
      setText('');
      if (fileInput.current) fileInput.current.value = '';
      onSent();
    } catch (err) {
      onError(err);
    } finally {
      setSending(false);
    }
  };

  const answer = async (message, option) => {
    try {
      await post(`/v1/conversations/${encodeURIComponent(conversation)}/answers`, {
        questionId: message.questionId,
        selectedOption: option.value,
        userId: 'web',
      });
      setMessages((all) => all.map((m) => (m.key === message.key ? { ...m, answered: option.label } : m)));
    } catch (err) {
      onError(err);
    }
  };

  return html`<section aria-label=${`Conversation ${conversation}`}>
    <div class="row">
      <h2 class="grow">${conversation}</h2>
      <span class="muted" role="status">${state}</span>
    </div>
    <ul class="messages" ref=${list} aria-live="polite">
      ${messages.map((m) => (m.tool ? html`<${ToolLine} key=${m.key} tool=${m.tool} />` : html`<${Message} key=${m.key} message=${m} onAnswer=${answer} />`))}
    </ul>
    <p class="typing" aria-live="polite">${typing ? 'the agent is working…' : ''}</p>
    <form onSubmit=${send}>
      <label for="message-text">Message</label>
      <textarea
        id="message-text"
        rows="3"
        value=${text}
        onInput=${(e) => setText(e.target.value)}
        onKeyDown=${(e) => e.key === 'Enter' && (e.ctrlKey || e.metaKey) && send(e)}
      ></textarea>
      <div class="row">
        <label for="message-files" class="grow">Attach files <input id="message-files" type="file" multiple ref=${fileInput} /></label>
        <button class="primary" type="submit" disabled=${sending}>${sending ? 'Sending…' : 'Send'}</button>
      </div>
    </form>
  </section>`;
}

/** Fold one streamed event into the message list: new messages append, edits and reactions change their target. */
function applyEvent(all, type, data, id) {
  const key = type === 'sent' ? `sent-${data.messageId}` : `event-${id}`;
  if (all.some((m) => m.key === key)) return all;
  if (type === 'sent') return [...all, { key, mine: true, text: data.text, files: data.files }];
  if (type === 'edit') return all.map((m) => (m.seq === data.messageId ? { ...m, text: data.text, edited: true } : m));
  if (type === 'reaction') return all.map((m) => (m.seq === data.messageId ? { ...m, reactions: [...(m.reactions ?? []), data.emoji] } : m));
  if (type === 'question') return [...all, { key, seq: data.seq, questionId: data.questionId, title: data.title, text: data.question, options: data.options }];
  if (type === 'notice') return [...all, { key, notice: true, text: data.text }];
  if (type === 'card') return [...all, { key, seq: data.seq, text: data.fallbackText ?? JSON.stringify(data.card) }];
  return [...all, { key, seq: data.seq, text: data.text, files: data.files, fileUrls: data.fileUrls }];
}

/**
 * A `tool` event (not kept by the host, so only while the page is open): a call's first event adds its line, later
 * ones change its status. Its start and end share `id` and `startedAt`. Name and preview are the agent's text: shown
 * as text only.
 */
function applyTool(all, data) {
  if (typeof data.name !== 'string' || !['running', 'ok', 'error'].includes(data.status)) return all;
  const key = `tool-${data.id}-${data.startedAt}`;
  const durationMs = typeof data.durationMs === 'number' ? data.durationMs : null;
  const known = all.find((m) => m.key === key);
  if (known) return all.map((m) => (m === known ? { ...m, tool: { ...m.tool, status: data.status, durationMs } } : m));
  const tool = { name: data.name, preview: typeof data.preview === 'string' ? data.preview : '', status: data.status, durationMs };
  // a running call's clock starts from when this page heard of it, less what it had run by then (no clock skew)
  return [...all, { key, tool: { ...tool, since: Date.now() - (durationMs ?? 0) } }];
}

const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/** One tool call: `… bash npm test  running 3 s`, then `✓ bash npm test  done 4.1 s` or `✗ … failed after 0.2 s`. */
function ToolLine({ tool }) {
  const [, tick] = useState(0);
  const running = tool.status === 'running';
  useEffect(() => {
    if (!running) return undefined;
    const timer = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [running]);
  const mark = running ? '…' : tool.status === 'ok' ? '✓' : '✗';
  const took = running ? Date.now() - tool.since : tool.durationMs;
  const state = running
    ? `running ${Math.floor(took / 1000)} s`
    : tool.status === 'ok'
      ? `done${took === null ? '' : ` ${seconds(took)}`}`
      : `failed${took === null ? '' : ` after ${seconds(took)}`}`;
  return html`<li class=${`tool-line ${tool.status}`}>
    <span class="tool-mark" aria-hidden="true">${mark}</span>
    <code class="tool-name">${tool.name}</code>
    ${tool.preview ? html`<span class="tool-args">${tool.preview}</span>` : null}
    <span class="tool-state">${state}</span>
  </li>`;
}

function Message({ message: m, onAnswer }) {
  return html`<li class=${`message${m.mine ? ' mine' : ''}${m.notice ? ' notice' : ''}`}>
    <div class="meta">${m.mine ? 'you' : m.notice ? 'host notice' : `agent${m.seq ? ` · #${m.seq}` : ''}`}${m.edited ? ' · edited' : ''}</div>
    ${m.title ? html`<strong>${m.title}</strong>` : null} ${m.notice ? html`<p>${m.text}</p>` : html`<${Markdown} text=${m.text} />`}
    ${
      (m.files ?? []).length > 0
        ? html`<ul>
            ${m.files.map((name, i) => html`<li>${m.fileUrls?.[i] ? html`<a href=${m.fileUrls[i]} download=${name}>${name}</a>` : name}</li>`)}
          </ul>`
        : null
    }
    ${
      m.options
        ? m.answered
          ? html`<p class="ok">Answered: ${m.answered}</p>`
          : html`<div class="row" role="group" aria-label="Answers">
              ${m.options.map((o) => html`<button onClick=${() => onAnswer(m, o)}>${o.label}</button>`)}
            </div>`
        : null
    }
    ${m.reactions ? html`<div class="reactions" aria-label="Reactions">${m.reactions.join(' ')}</div>` : null}
  </li>`;
}
