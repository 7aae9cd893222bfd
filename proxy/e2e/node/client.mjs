// One call of the official OpenAI Node SDK through recourse-proxy, for the
// proxy's end-to-end tests. The Go test starts the scripted upstream and the
// proxy, then runs: node client.mjs <unary|stream>, with PROXY_URL set.
// It prints one JSON line: the content the SDK gave, the chunks of a stream,
// and the SDK's own error (its class name, status and message) if the call
// failed. The SDK keeps its default retries (maxRetries 2), so the tests
// show that the proxy's X-Should-Retry: false stops them.
import OpenAI from 'openai';

const mode = process.argv[2];
const client = new OpenAI({ apiKey: 'sk-e2e-test', baseURL: process.env.PROXY_URL + '/v1', timeout: 20000 });
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
