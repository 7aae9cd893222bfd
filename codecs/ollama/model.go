package ollama

import "github.com/recourse-dev/recourse/codecs/internal/jsonmember"

// WithModel returns a copy of body, a request body of this codec's wire,
// whose top-level "model" member names model (codec.ModelRewriter): every
// other byte is kept. body is never modified; a body that is not a JSON
// object is an error. A fallback target of the same wire uses it (R20.1).
func (*Codec) WithModel(body []byte, model string) ([]byte, error) {
	return jsonmember.SetString(body, "model", model)
}
