// Package gemininode holds the end-to-end tests of recourse-proxy's Gemini
// provider with real Node clients — Google's @google/genai and the Vercel
// AI SDK's @ai-sdk/google, both at their defaults — against the scripted
// provider on loopback. The tests need the build tag proxye2e, node and
// npm (make proxy-e2e); the clients are pinned in package-lock.json and
// installed by npm ci into a temporary directory.
package gemininode
