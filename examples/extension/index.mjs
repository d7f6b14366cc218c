/**
 * An example Pincer extension. Put this folder's package.json "pincer" key and index.mjs in an agent group's folder
 * (or copy index.mjs to its extensions/ folder); the runner loads it before it chooses the runtime.
 *
 * It registers:
 * - a tool, `word_count`, that the built-in runtime (provider `pincer`) offers the model;
 * - a harness, `parrot` (alias `repeat`): a runtime that answers every prompt with `parrot: <prompt>`. It supports one
 *   model route — Chat Completions at a server named echo.invalid — so `auto` picks it for
 *   `PINCER_MODEL=local/demo OPENAI_BASE_URL=http://echo.invalid/v1`, and the built-in runtime for everything else.
 *
 * Extensions are plain JavaScript and import nothing from Pincer: the runner passes everything in.
 */
export default function register(pincer) {
  pincer.registerTool({
    name: 'word_count',
    description: 'Count the words of a text.',
    parameters: { type: 'object', properties: { text: { type: 'string', description: 'the text' } }, required: ['text'] },
    execute: ({ text }) => {
      const words = String(text).trim().split(/\s+/).filter(Boolean).length;
      return `${words} word${words === 1 ? '' : 's'}`;
    },
  });

  pincer.registerHarness({
    id: 'parrot',
    aliases: ['repeat'],
    // A harness claims routes by API and endpoint, never by a provider prefix alone.
    supportsRoute: (route) => route.api === 'openai-completions' && route.baseUrl !== undefined && new URL(route.baseUrl).hostname === 'echo.invalid',
    create: () => new ParrotProvider(),
  });
  pincer.log('word_count tool and parrot harness registered');
}

/** The provider contract: query() returns push/end/abort and an async stream of init/result/error/progress events. */
class ParrotProvider {
  nativeSlashCommands = [];

  query(input) {
    const prompts = [text(input.prompt)];
    let wake = () => {};
    let ended = false;
    const next = async () => {
      while (prompts.length === 0 && !ended) await new Promise((resolve) => (wake = resolve));
      return prompts.shift();
    };
    async function* events() {
      yield { type: 'init', sessionId: input.sessionId ?? `parrot-${Date.now()}` };
      for (let prompt = await next(); prompt !== undefined; prompt = await next()) yield { type: 'result', text: `parrot: ${prompt}` };
    }
    return {
      push: (message) => (prompts.push(message), wake()),
      end: () => ((ended = true), wake()),
      abort: () => ((ended = true), (prompts.length = 0), wake()),
      events: events(),
    };
  }
}

function text(prompt) {
  return typeof prompt === 'string' ? prompt : prompt.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}
