// One call of the official OpenAI Node SDK through recourse-proxy, for the
// proxy's end-to-end tests. The Go test starts the scripted upstream and the
// proxy, then runs: node client.mjs <unary|stream|timeout-retry>, with PROXY_URL set.
// It prints one JSON line: the content the SDK gave, the chunks of a stream,
// and the SDK's own error (its class name, status and message) if the call
// failed. The SDK keeps its default retries (maxRetries 2), so the tests
// show that the proxy's X-Should-Retry: false stops them.
import OpenAI from 'openai';

// Mode timeout-retry is a unary call with a 1 s timeout and one SDK retry:
// the SDK gives up on a slow answer and retries on its own, numbering the
// retry in X-Stainless-Retry-Count.
const mode = process.argv[2];
const client = mode === 'timeout-retry'
  ? new OpenAI({ apiKey: 'sk-e2e-test', baseURL: process.env.PROXY_URL + '/v1', timeout: 1000, maxRetries: 1 })
  : new OpenAI({ apiKey: 'sk-e2e-test', baseURL: process.env.PROXY_URL + '/v1', timeout: 20000 });
const params = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] };
const out = { content: '', chunks: 0, error: null };

try {
  if (mode === 'stream') {
    const stream = await client.chat.completions.create({ ...params, stream: true });
    for await (const chunk of stream) {
      out.chunks++;
      for (const c of chunk.choices) out.content += c.delta?.content ?? '';
    }
  } else {
    const res = await client.chat.completions.create(params);
    out.content = res.choices[0].message.content;
  }
} catch (err) {
  out.error = {
    name: err.constructor.name,
    status: err.status ?? null,
    apiError: err instanceof OpenAI.APIError,
    message: String(err.message),
  };
}
process.stdout.write(JSON.stringify(out) + '\n');
