//go:build proxye2e

// Package e2e drives recourse-proxy with real clients: the official OpenAI
// Node SDK, the Vercel AI SDK (ai, @ai-sdk/openai) and LangChain.js
// (@langchain/openai), each at its default retry settings (the npm
// packages pinned in node/package-lock.json and installed with npm ci into
// a temporary directory; several declare node >=22 and run on this
// machine's node 20, which the tests log), and curl against the Ollama
// endpoint. The tests build only with the proxye2e tag; run them
// with make proxy-e2e, which .ci/run calls after make test.
package e2e
