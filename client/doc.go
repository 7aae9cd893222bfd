// Package client is recourse's native typed client. A Client encodes a
// provider-neutral chat.Request once with its chain's codec, sends it
// through a chain (package chain assembles one) and returns the decoded
// completion, a stream of chunks, or a stream of typed events; failures
// come back as typed errors (*layer.RecoveryError, *layer.StreamError,
// *StatusError). WithFallback lets a client fall back to other clients,
// of any provider, when recovery on the current one ends.
//
//	ch, err := chain.Default(openai.New())
//	...
//	cl, err := client.New("https://api.openai.com", ch, client.WithAPIKey(key))
//	...
//	completion, err := cl.Complete(ctx, req)
package client
