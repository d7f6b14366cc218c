// Talking to the host: JSON over fetch with the session cookie (set by POST /v1/login), and one EventSource per
// open conversation. Every error becomes an Error whose message is the host's own explanation.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, `the host did not answer (${err.message}); is it still running?`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: text };
  }
  if (!res.ok) throw new ApiError(res.status, (data && data.error) || `${method} ${path} failed with ${res.status}`);
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body = {}) => api('POST', path, body);
export const patch = (path, body) => api('PATCH', path, body);
export const put = (path, body) => api('PUT', path, body);

/** Event types the host streams for a conversation (the SSE `event:` names). */
export const STREAM_EVENTS = ['sent', 'chat', 'edit', 'reaction', 'question', 'card', 'notice', 'typing', 'tool', 'reset'];

/**
 * Follow a conversation's stream from its beginning: `after=0` asks for the history first (`sent=1`: with what was
 * posted to it, so a reloaded page shows both sides), and EventSource resends the last id it saw when it reconnects,
 * so nothing is missed or repeated.
 */
export function openStream(conversation, onEvent, onState) {
  const source = new EventSource(`/v1/conversations/${encodeURIComponent(conversation)}/stream?after=0&sent=1`);
  for (const type of STREAM_EVENTS) {
    source.addEventListener(type, (e) => {
      let data;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      onEvent(type, data, e.lastEventId);
    });
  }
  source.onopen = () => onState('live');
  source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  return () => source.close();
}

/** A File → the attachment object of the messages API (base64 data). */
export function fileToAttachment(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onerror = () => reject(new Error(`cannot read ${file.name}`));
    reader.onload = () => {
      const data = String(reader.result).replace(/^data:[^,]*,/, '');
      const type = file.type.startsWith('image/')
        ? 'image'
        : file.type === 'application/pdf'
          ? 'pdf'
          : file.type.startsWith('audio/')
            ? 'audio'
            : file.type.startsWith('video/')
              ? 'video'
              : 'file';
      resolve({ type, name: file.name, mimeType: file.type || undefined, data, size: file.size });
    };
    reader.readAsDataURL(file);
  });
}
