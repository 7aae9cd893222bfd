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
//   openai-chat-stream  the official SDK's chat.completions.create, streamed,
//                       with max_tokens
//   ai-chat-stream      the Vercel AI SDK's streamText on the chat
//                       completions model (provider.chat)
// It prints one JSON line: the text the client gave, the number of events
// or parts it read, the response's id and status when it has them, the
// response ids and sequence numbers of the events in order (ids, seqs), the
// AI SDK's stream parts other than deltas with their ids (parts), the
// finish reason a stream ended with (finish), and the client's own error
// (its class name, status and message) if the call failed. The SDKs keep their default retries, so the tests show that the
// proxy's X-Should-Retry: false stops them.
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';

const mode = process.argv[2];
const baseURL = process.env.PROXY_URL + '/v1';
const apiKey = 'sk-e2e-test';
const out = { text: '', events: 0, id: null, status: null, ids: [], seqs: [], parts: [], finish: null, error: null };

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
    } else if (mode === 'openai-chat-stream') {
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5, stream: true,
      });
      for await (const chunk of stream) {
        out.events++;
        out.ids.push(chunk.id);
        for (const c of chunk.choices) {
          out.text += c.delta?.content ?? '';
          if (c.finish_reason) out.finish = c.finish_reason;
        }
      }
    } else {
      const params = { model: 'gpt-4.1-mini', input: 'hello', stream: true };
      if (mode === 'openai-background') Object.assign(params, { background: true, store: true });
      const stream = await client.responses.create(params);
      for await (const ev of stream) {
        out.events++;
        out.seqs.push(ev.sequence_number);
        if (ev.response) out.ids.push(ev.response.id);
        if (ev.type === 'response.output_text.delta') out.text += ev.delta;
        if (ev.type === 'response.completed' || ev.type === 'response.incomplete') {
          out.id = ev.response.id;
          out.status = ev.response.status;
          out.finish = ev.response.incomplete_details?.reason ?? null;
        }
      }
    }
  } else {
    const provider = createOpenAI({ apiKey, baseURL });
    const model = mode === 'ai-chat-stream' ? provider.chat('gpt-4o-mini') : provider('gpt-4.1-mini');
    if (mode === 'ai-stream' || mode === 'ai-chat-stream') {
      const result = streamText({ model, prompt: 'hello', maxRetries: 0, maxOutputTokens: 5 });
      for await (const part of result.fullStream) {
        out.events++;
        if (part.type === 'text-delta') out.text += part.text;
        else out.parts.push(part.id ? part.type + ':' + part.id : part.type);
        if (part.type === 'finish-step') {
          out.id = part.response?.id ?? null;
          out.finish = part.finishReason;
        }
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
