// Package codec is the interface a provider codec implements: the types
// used for writing a codec, and nothing else. A codec translates between
// the provider-neutral chat model (package chat) and one provider's wire
// format, and tells the recovery engine what a body means; recovery reads
// a codec's declarations, never a provider's name.
//
// A codec implements Codec. For a streaming request its NewObserver returns
// a StreamDecoder, which frames and decodes the body as it arrives and
// queues Frames. A codec may also implement the optional interfaces the
// engine finds by type assertion: Checker (judge a body without decoding
// it), BufferFreer (reuse a finished stream's buffers), ErrorFramer and
// ErrorDocumenter (write an in-band error frame or an error body in the
// provider's dialect), ModelRewriter (name another model in a body, for a
// fallback), Resumer (read a background stream again), Router (a wire
// that names the model and the operation in the URL path; every stage
// reads such a request with DescribeRequest) and BodyHinter (resend hints
// written into an error body).
//
// Facts and Capabilities are the codec's declarations about its provider;
// Counts and Metrics the evidence its observers count. The typed errors a
// codec returns are ProviderError, ProtocolError, UnsupportedError and, for
// a frame that ends a stream on an incomplete finish, IncompleteError.
//
// Package codec imports only the standard library and package chat: a
// codec needs nothing of package layer, the recovery vocabulary, and the
// contract test every codec passes is codectest.Codec.
package codec
