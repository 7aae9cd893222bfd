// Package anthropicnode holds the end-to-end tests of recourse-proxy's
// /v1/messages with real Node clients — the official Anthropic TypeScript
// SDK, the Vercel AI SDK's anthropic provider and LangChain's
// ChatAnthropic, each at its defaults — against the scripted provider on
// loopback. The tests need the build tag proxye2e, node and npm (make
// proxy-e2e); the clients are pinned in package-lock.json and installed by
// npm ci into a temporary directory.
package anthropicnode
