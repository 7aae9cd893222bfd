// Real clients of the Gemini API through recourse-proxy, for the proxy's
// end-to-end tests of the generateContent endpoints. The Go test starts the
// scripted upstream and the proxy, then runs: node client.mjs <mode>, with
// PROXY_URL set. Modes:
//   genai-generate   @google/genai's models.generateContent
//   genai-stream     @google/genai's models.generateContentStream
//   ai-generate      the Vercel AI SDK's generateText with google(model)
//   ai-stream        the same with streamText
// It prints one JSON line: the text the client gave, the number of chunks
// or parts it read, and the client's own error (its class name, status,
// the AI SDK's attempt count and message) if the call failed. The clients
// keep their defaults.
import { GoogleGenAI } from '@google/genai';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { generateText, streamText, APICallError, RetryError } from 'ai';

const mode = process.argv[2];
const apiKey = 'e2e-test-key';
const model = 'gemini-2.5-flash';
const out = { text: '', events: 0, error: null };

try {
  if (mode.startsWith('genai-')) {
    const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: process.env.PROXY_URL } });
    if (mode === 'genai-stream') {
      const stream = await ai.models.generateContentStream({ model, contents: 'hello' });
      for await (const chunk of stream) {
        out.events++;
        out.text += chunk.text ?? '';
      }
    } else {
      const res = await ai.models.generateContent({ model, contents: 'hello' });
      out.text = res.text ?? '';
    }
  } else {
    const google = createGoogleGenerativeAI({ apiKey, baseURL: process.env.PROXY_URL + '/v1beta' });
    if (mode === 'ai-stream') {
      const result = streamText({ model: google(model), prompt: 'hello' });
      for await (const part of result.fullStream) {
        out.events++;
        if (part.type === 'text-delta') out.text += part.text;
        if (part.type === 'error') throw part.error;
      }
    } else {
      const result = await generateText({ model: google(model), prompt: 'hello' });
      out.text = result.text;
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
