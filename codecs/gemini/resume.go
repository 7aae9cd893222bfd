package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

var _ codec.Resumer = (*Codec)(nil)

// Background reports false: the Gemini API keeps no background response.
func (c *Codec) Background([]byte) bool { return false }

// ResumePoint returns the checkpoint a stream decoded by obs continues
// from (R23.9): the continuation token of the last checkpoint chunk the
// consumer was handed (a chunk whose first candidate carries a
// continuationToken with no finish reason, or with CONTINUATION), with
// Cursor -1. ok is false for any other observer, a stream that handed over
// no checkpoint, and a stream that handed over output after its last
// checkpoint: the provider would generate that output again, and the
// consumer would read it twice or read a different text.
func (c *Codec) ResumePoint(obs codec.Observer) (codec.ResumePoint, bool) {
	d, ok := obs.(*streamDecoder)
	if !ok || d.at.token == "" || d.outAfter {
		return codec.ResumePoint{}, false
	}
	return codec.ResumePoint{Cursor: -1, Token: d.at.token}, true
}

// ResumeRequest returns the continuation of the stream after p (R23.9):
// create's method, URL and headers, and the body of create (read again
// through its GetBody) with the top-level member "continuationToken" set to
// p.Token, in place of any it had; the other members keep their order and
// bytes. A body that cannot be read again or is not a JSON object is sent
// as {"continuationToken":…} alone, which the provider refuses: the
// request is never sent again without the token. create is not modified.
func (c *Codec) ResumeRequest(create *http.Request, p codec.ResumePoint) *http.Request {
	var body []byte
	if create.GetBody != nil {
		if rc, err := create.GetBody(); err == nil {
			body, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				body = nil
			}
		}
	}
	nb := withToken(body, p.Token)
	r := create.Clone(create.Context())
	r.Body = io.NopCloser(bytes.NewReader(nb))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(nb)), nil }
	r.ContentLength = int64(len(nb))
	r.Header.Del("Content-Length")
	return r
}

// withToken returns body, a JSON object, with its member
// "continuationToken" set to token, or an object of that member alone
// when body is not a JSON object.
func withToken(body []byte, token string) []byte {
	tok, _ := json.Marshal(token) // a string always marshals
	b := jsonscan.TrimSpace(body)
	out := make([]byte, 0, len(b)+len(tok)+24)
	out = append(out, '{')
	if len(b) > 0 && b[0] == '{' && jsonscan.Valid(b) {
		m := jsonscan.ObjectMembers(b)
		for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
			if string(k) == "continuationToken" {
				continue
			}
			key, _ := json.Marshal(string(k))
			out = append(out, key...)
			out = append(out, ':')
			out = append(out, v...)
			out = append(out, ',')
		}
	}
	out = append(out, `"continuationToken":`...)
	out = append(out, tok...)
	return append(out, '}')
}

// ResumeObserver returns the stream decoder of the continuation after p: it
// continues obs, a stream decoder of this codec, as it was at its last
// checkpoint handed over (the text, tool calls, counts, model and response
// ID decoded up to it), so the terminal frame's Completion is the whole
// answer and each byte is counted once (R23.9). Output obs decoded after
// the checkpoint was not handed over (ResumePoint) and is left out. For
// any other obs it returns a new stream decoder.
func (c *Codec) ResumeObserver(obs codec.Observer, p codec.ResumePoint) codec.Observer {
	prev, _ := obs.(*streamDecoder)
	info := codec.RequestInfo{Operation: codec.Streaming}
	if prev != nil {
		info.DropText, info.TypedFrames, info.ProviderFinish = prev.dropText, prev.q.ErrorRawOnly, prev.providerFinish
	}
	d := newStreamDecoder(info)
	d.at.token = p.Token
	if prev != nil {
		at := prev.at
		d.content.WriteString(prev.content.String()[:at.content])
		d.think.WriteString(prev.think.String()[:at.think])
		d.calls = slices.Clone(prev.calls[:at.calls])
		d.counts, d.model, d.id, d.usage = at.counts, at.model, at.id, at.usage
		at.index = 0 // the new stream's frames are numbered afresh
		d.at = at
		d.at.token = p.Token
	}
	return d
}

// CancelRequest returns nil: a Gemini stream has nothing to cancel.
func (c *Codec) CancelRequest(*http.Request, string) *http.Request { return nil }

// ReadOf reports ok=false: the Gemini API has no read of a stored
// response.
func (c *Codec) ReadOf(*http.Request, []byte) (codec.ResumePoint, bool, bool) {
	return codec.ResumePoint{}, false, false
}

// Creates reports true for every request: the engine judges each as it
// did before (a completion, or a request forwarded once, R23.8); none is a
// read of a stored response.
func (c *Codec) Creates(*http.Request) bool { return true }
