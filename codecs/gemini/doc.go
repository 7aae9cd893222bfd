// Package gemini is the codec of Google's Gemini API generateContent
// endpoints: POST /v1beta/models/{model}:generateContent (an ordinary or
// structured call) and POST /v1beta/models/{model}:streamGenerateContent?alt=sse
// (a stream of Server-Sent Events), and the same under /v1.
//
// The wire names the model and the operation in the URL path, not in the
// body, so the Codec is a codec.Router: every stage describes a request by
// its URL and body (codec.DescribeRequest), the native client posts to
// RoutePath, and a fallback to another Gemini model rewrites the path
// (WithModelURL), every byte of the body kept (R23.1).
//
// Errors follow google.rpc.Status, {"error":{"code","message","status",
// "details"}}. ErrorCode returns the status ("RESOURCE_EXHAUSTED"); the
// codec is a codec.BodyHinter: a RetryInfo.retryDelay in the body is a
// minimum delay with the force of Retry-After, and a QuotaFailure whose
// quotaId names a per-day quota makes a 429 not eligible (R23.2).
//
// A stream's events are data: {GenerateContentResponse}, with no [DONE]: its
// end is HTTP EOF after a candidate's finishReason. STOP (or a stream whose
// only candidate carries function calls and STOP) is accepted at EOF, usage
// chunks after it included; MAX_TOKENS and every other finish reason
// (SAFETY, RECITATION, …) end the stream at once as an incomplete
// completion; CONTINUATION (a long decode's hop, whose client sends the
// request again with the continuation token) is accepted at EOF and is
// neither an incomplete finish nor a failure (R23.5). An in-band
// data: {"error":{…}} event is a *codec.ProviderError naming its HTTP
// status (R23.3). EOF before a finish reason is an incomplete stream.
//
// The Codec is a codec.Resumer for checkpoints (R23.9): a stream cut right
// after a chunk with a continuationToken (and no output after it) is
// continued with the same request and the token, from the decoder's state
// at the checkpoint, so the caller reads each byte once.
package gemini
