//go:build proxye2e

// Package e2e drives recourse-proxy with real clients: the official OpenAI
// Node SDK (the npm package openai, pinned in node/package-lock.json and
// installed with npm ci into a temporary directory) and curl against the
// Ollama endpoint. The tests build only with the proxye2e tag; run them
// with make proxy-e2e, which .ci/run calls after make test.
package e2e
