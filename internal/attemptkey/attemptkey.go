// Package attemptkey holds the context key under which the engine places a
// wire attempt: package layer reads it (layer.AttemptFrom) and package
// attempt writes it, and neither can import the other's side.
package attemptkey

// Key is the context key of a request's wire attempt.
type Key struct{}
