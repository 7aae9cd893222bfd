// Real clients of Claude's Messages API through recourse-proxy, for the
// proxy's end-to-end tests of /v1/messages. The Go test starts the
// scripted upstream and the proxy, then runs: node client.mjs <mode>, with
// PROXY_URL set. Modes:
//   sdk-create       the official SDK's messages.create (unary)
//   sdk-stream       the same with stream: true
//   ai-generate      the Vercel AI SDK's generateText with anthropic(model)
//   ai-stream        the same with streamText
//   langchain        LangChain's ChatAnthropic.invoke
//   langchain-stream LangChain's ChatAnthropic.stream
// It prints one JSON line: the text the client gave, the number of events
// or parts it read, and the client's own error (its class name, status,
// the AI SDK's attempt count and message) if the call failed. The clients
// keep their default retries, so the tests show that the proxy's
// x-should-retry: false stops them, or that its memory answers a client
// that ignores it (R21.3).
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText, APICallError, RetryError } from 'ai';
import { ChatAnthropic } from '@langchain/anthropic';

const mode = process.argv[2];
const baseURL = process.env.PROXY_URL;
const apiKey = 'sk-ant-e2e-test';
const model = 'claude-sonnet-4-5';
const out = { text: '', events: 0, error: null };

try {
  if (mode.startsWith('sdk-')) {
    const client = new Anthropic({ apiKey, baseURL, timeout: 20000 });
    const params = { model, max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] };
    if (mode === 'sdk-stream') {
      const stream = await client.messages.create({ ...params, stream: true });
      for await (const ev of stream) {
        out.events++;
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') out.text += ev.delta.text;
      }
    } else {
      const msg = await client.messages.create(params);
      out.text = msg.content.map((b) => b.text ?? '').join('');
    }
  } else if (mode.startsWith('ai-')) {
    const provider = createAnthropic({ apiKey, baseURL: baseURL + '/v1' });
    if (mode === 'ai-stream') {
      const result = streamText({ model: provider(model), prompt: 'hello', maxRetries: 0 });
      for await (const part of result.fullStream) {
        out.events++;
        if (part.type === 'text-delta') out.text += part.text;
        if (part.type === 'error') throw part.error;
      }
    } else {
      const result = await generateText({ model: provider(model), prompt: 'hello' });
      out.text = result.text;
    }
  } else {
    const chat = new ChatAnthropic({ model, apiKey, anthropicApiUrl: baseURL, maxTokens: 64 });
    if (mode === 'langchain-stream') {
      for await (const chunk of await chat.stream('hello')) {
        out.events++;
        out.text += typeof chunk.content === 'string' ? chunk.content : chunk.content.map((c) => c.text ?? '').join('');
      }
    } else {
      const msg = await chat.invoke('hello');
      out.text = typeof msg.content === 'string' ? msg.content : msg.content.map((c) => c.text ?? '').join('');
    }
  }
} catch (err) {
  // The AI SDK's RetryError carries each attempt's error: the status is
  // that of the last, and attempts is how many requests the SDK sent.
  const last = RetryError.isInstance(err) ? err.lastError : err;
  out.error = {
    name: err?.constructor?.name ?? 'Error',
    status: err?.status ?? (APICallError.isInstance(last) ? last.statusCode : err?.statusCode) ?? null,
    attempts: RetryError.isInstance(err) ? err.errors.length : null,
    message: String(err?.message ?? err),
  };
}
process.stdout.write(JSON.stringify(out) + '\n');
