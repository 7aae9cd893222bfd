// Package proxyopenaigo shows openai-go, unmodified (its own transport and
// its default retries), pointed at recourse-proxy: the only change is the
// base URL, option.WithBaseURL("http://127.0.0.1:8787/v1/"). Its tests run
// the proxy's handler on loopback in front of a scripted provider.
package proxyopenaigo
