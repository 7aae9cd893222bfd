package proxy

import (
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
)

// responsesPath is the path of OpenAI's Responses API, which an openai
// proxy serves with recovery beside /v1/chat/completions (R19.9–R19.13,
// R21).
const responsesPath = "/v1/responses"

// withResponses returns the Handler of the Responses API for h, an openai
// proxy: h's configuration with codec, the Responses codec, and a chain of its own
// built from the same policy, transport and layers. A drop-in body
// decides foreground or background itself ("background":true).
func (h *Handler) withResponses(cdc codec.Codec, base http.RoundTripper, perCall, perAttempt []layer.Layer) (*Handler, error) {
	rh := *h
	rh.codec = cdc
	rh.responses = nil
	var err error
	rh.chain, err = chain.Default(rh.codec, chain.WithPolicy(h.policy), chain.WithTransport(base),
		chain.WithPerCall(perCall...), chain.WithPerAttempt(perAttempt...))
	if err != nil {
		return nil, err
	}
	return &rh, nil
}

// routes reports whether r is a request the Responses chain recovers: a
// create (POST /v1/responses) or a read of a stored response
// (GET /v1/responses/{id}, with or without stream=true). A cancel, a delete
// and everything else are forwarded as they are.
func (h *Handler) routes(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost:
		return r.URL.Path == responsesPath
	case http.MethodGet:
		id, ok := strings.CutPrefix(r.URL.Path, responsesPath+"/")
		return ok && id != "" && !strings.Contains(id, "/")
	}
	return false
}
