// Package responsesnode holds the end-to-end tests of recourse-proxy's
// /v1/responses with real Node clients — the official OpenAI SDK's
// responses.create (streamed and background) and responses.retrieve, and
// the Vercel AI SDK's default openai(model) path — against the scripted
// provider on loopback. The tests need the build tag proxye2e, node and
// npm (make proxy-e2e); the clients are pinned in package-lock.json and
// installed by npm ci into a temporary directory. Its own package.json
// keeps it apart from the chat completions e2e in ../node.
package responsesnode
