// Real clients of OpenAI's Responses API through recourse-proxy, for the
// proxy's end-to-end tests of /v1/responses. The Go test starts the
// scripted upstream and the proxy, then runs: node client.mjs <mode>, with
// PROXY_URL set. Modes:
//   openai-stream       the official SDK's responses.create, streamed
//   openai-background   the same with background: true (store: true)
//   openai-retrieve     responses.retrieve(RESPONSE_ID), a poll
//   openai-poll         a unary background responses.create, then
//                       responses.retrieve until the response is done
//   ai-stream           the Vercel AI SDK's streamText with the default
//                       openai(model) path, which is the Responses API
//   ai-generate         the same with generateText (unary)
// It prints one JSON line: the text the client gave, the number of events
// or parts it read, the response's id and status when it has them, and the
// client's own error (its class name, status and message) if the call
// failed. The SDKs keep their default retries, so the tests show that the
// proxy's X-Should-Retry: false stops them.
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';

const mode = process.argv[2];
const baseURL = process.env.PROXY_URL + '/v1';
const apiKey = 'sk-e2e-test';
const out = { text: '', events: 0, id: null, status: null, error: null };

try {
  if (mode.startsWith('openai-')) {
    const client = new OpenAI({ apiKey, baseURL, timeout: 20000 });
    if (mode === 'openai-retrieve') {
      const res = await client.responses.retrieve(process.env.RESPONSE_ID);
      out.id = res.id;
      out.status = res.status;
    } else if (mode === 'openai-poll') {
      let res = await client.responses.create({ model: 'gpt-4.1-mini', input: 'hello', background: true });
      out.id = res.id;
      while (res.status === 'queued' || res.status === 'in_progress') {
        out.events++;
        res = await client.responses.retrieve(res.id);
      }
      out.status = res.status;
      out.text = res.output_text;
    } else {
      const params = { model: 'gpt-4.1-mini', input: 'hello', stream: true };
      if (mode === 'openai-background') Object.assign(params, { background: true, store: true });
      const stream = await client.responses.create(params);
      for await (const ev of stream) {
        out.events++;
        if (ev.type === 'response.output_text.delta') out.text += ev.delta;
        if (ev.type === 'response.completed') {
          out.id = ev.response.id;
          out.status = ev.response.status;
        }
      }
    }
  } else {
    const provider = createOpenAI({ apiKey, baseURL });
    const model = provider('gpt-4.1-mini');
    if (mode === 'ai-stream') {
      const result = streamText({ model, prompt: 'hello', maxRetries: 0 });
      for await (const part of result.fullStream) {
        out.events++;
        if (part.type === 'text-delta') out.text += part.text;
        if (part.type === 'error') throw part.error;
      }
    } else {
      const result = await generateText({ model, prompt: 'hello' });
      out.text = result.text;
      out.id = result.response?.id ?? null;
    }
  }
} catch (err) {
  out.error = {
    name: err?.constructor?.name ?? 'Error',
    status: err?.status ?? err?.statusCode ?? null,
    message: String(err?.message ?? err),
  };
}
process.stdout.write(JSON.stringify(out) + '\n');
