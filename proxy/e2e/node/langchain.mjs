// One call of LangChain.js (@langchain/openai's ChatOpenAI) through
// recourse-proxy, for the proxy's end-to-end tests: node langchain.mjs,
// with PROXY_URL set. LangChain keeps its default retries: it turns the
// OpenAI SDK's own retries off and retries up to 6 times itself (p-retry,
// waits doubling from 1 s, each randomised up to twice as long), sending
// X-Stainless-Retry-Count: 0 each time and reading neither X-Should-Retry
// nor X-Recourse-Outcome. It prints one JSON line: the content, or the
// error LangChain threw (its class name, its status, its message).
import { ChatOpenAI } from '@langchain/openai';

const model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-e2e-test', configuration: { baseURL: process.env.PROXY_URL + '/v1' } });
const out = { content: '', error: null, node: process.version };
try {
  const res = await model.invoke('hello');
  out.content = String(res.content);
} catch (err) {
  out.error = {
    name: err.constructor.name,
    status: err.status ?? null,
    message: String(err.message),
  };
}
process.stdout.write(JSON.stringify(out) + '\n');
