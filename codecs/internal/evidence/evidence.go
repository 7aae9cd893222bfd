// Package evidence holds what the capability declarations (R15.2) of the
// codecs of one inspection share: the date their providers' documentation
// was read.
package evidence

// InspectedOn is the date, in ISO 8601, on which the documentation of the
// Ollama, oMLX and OpenAI Chat Completions codecs was inspected for their
// capability evidence. A codec whose documentation was read on another day
// keeps its own date.
const InspectedOn = "2026-10-17"
