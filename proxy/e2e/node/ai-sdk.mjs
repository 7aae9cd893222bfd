// One call of the Vercel AI SDK (ai + @ai-sdk/openai) through
// recourse-proxy, for the proxy's end-to-end tests: node ai-sdk.mjs, with
// PROXY_URL set. The SDK keeps its default retries (maxRetries 2, after
// 2 s and 4 s, on every status from 500 up, 408, 409 and 429); it reads
// neither X-Should-Retry nor X-Recourse-Outcome, so the proxy must answer
// its repeats itself. It uses the chat completions model
// (provider.chat), the endpoint the proxy recovers. It prints one JSON
// line: the text, or the SDK's own error (its class name, the status of its
// last API call error, the number of attempts the SDK made).
import { generateText, APICallError, RetryError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const provider = createOpenAI({ apiKey: 'sk-e2e-test', baseURL: process.env.PROXY_URL + '/v1' });
const out = { content: '', error: null, node: process.version };
try {
  const res = await generateText({ model: provider.chat('gpt-4o-mini'), prompt: 'hello' });
  out.content = res.text;
} catch (err) {
  const last = RetryError.isInstance(err) ? err.lastError : err;
  out.error = {
    name: err.constructor.name,
    status: APICallError.isInstance(last) ? last.statusCode ?? null : null,
    attempts: RetryError.isInstance(err) ? err.errors.length : 1,
    message: String(last?.message ?? err.message),
  };
}
process.stdout.write(JSON.stringify(out) + '\n');
