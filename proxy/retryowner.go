package proxy

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// DefaultRepeatWindow is the default Config.RepeatWindow: three minutes,
// longer than the default retry schedules of the JavaScript clients that
// ignore X-Should-Retry (the Vercel AI SDK waits 2 s and 4 s; LangChain.js
// retries 6 times with waits that double from 1 s to 32 s, each randomised
// up to twice as long, about 2 minutes in all).
const DefaultRepeatWindow = 3 * time.Minute

// HeaderReplayed is the response header, "true", of a final answer the
// proxy repeated from memory without contacting the upstream (see
// Config.RepeatWindow).
const HeaderReplayed = "X-Recourse-Replayed"

// The bounds of the memory of final answers: how many are kept (the oldest
// goes first) and the longest body kept; a final answer with a longer body
// is not remembered, so its repeat goes through.
const (
	maxFinals     = 1024
	maxFinalBytes = 16 << 10
)

// finalKey identifies a completion request: a SHA-256 over its request URI,
// its credential headers and its body. The request is kept only as this
// hash.
type finalKey [sha256.Size]byte

// credKey identifies a credential: a SHA-256 over the credential headers.
type credKey [sha256.Size]byte

// accountHeaders are the request headers that say whose account a call is
// charged to: the credential headers, then OpenAI's organization and
// project selectors.
var accountHeaders = append(layer.CredentialHeaders(), "OpenAI-Organization", "OpenAI-Project")

// final is a remembered final answer.
type final struct {
	at     time.Time
	cred   credKey
	status int
	header http.Header
	body   []byte
}

// finals is the proxy's memory of the final failures it answered, so that
// the proxy stays the only retry owner whatever the client does (R21.3).
// It is safe for concurrent use.
type finals struct {
	window time.Duration
	now    func() time.Time

	mu     sync.Mutex
	byKey  map[finalKey]*final
	byCred map[credKey]map[finalKey]struct{}
}

func newFinals(window time.Duration, now func() time.Time) *finals {
	return &finals{window: window, now: now, byKey: map[finalKey]*final{}, byCred: map[credKey]map[finalKey]struct{}{}}
}

// keys returns the request's and the credential's keys.
func keys(r *http.Request, body []byte) (finalKey, credKey) {
	c := sha256.New()
	io.WriteString(c, "recourse-proxy credential\x00")
	if k, ok := r.Context().Value(admittedKey{}).(*ClientKey); ok {
		// An admitted client's key was removed (R21.12): its hash stands
		// for it, so that clients sharing the held key keep apart.
		io.WriteString(c, "client\x00")
		c.Write(k.Hash[:])
	}
	for _, name := range accountHeaders {
		for _, v := range r.Header.Values(name) {
			io.WriteString(c, name)
			c.Write([]byte{0})
			io.WriteString(c, v)
			c.Write([]byte{0})
		}
	}
	var ck credKey
	c.Sum(ck[:0])
	k := sha256.New()
	io.WriteString(k, "recourse-proxy request\x00")
	k.Write(ck[:])
	io.WriteString(k, r.URL.RequestURI())
	k.Write([]byte{0})
	k.Write(body)
	var fk finalKey
	k.Sum(fk[:0])
	return fk, ck
}

// lookup returns the live final answer of k, or nil.
func (f *finals) lookup(k finalKey) *final {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.byKey[k]
	if e == nil {
		return nil
	}
	if f.now().Sub(e.at) >= f.window {
		f.drop(k, e)
		return nil
	}
	return e
}

// remember keeps a final answer for k.
func (f *finals) remember(k finalKey, e *final) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.byKey[k]; old != nil {
		f.drop(k, old)
	}
	if len(f.byKey) >= maxFinals {
		f.evict()
	}
	f.byKey[k] = e
	set := f.byCred[e.cred]
	if set == nil {
		set = map[finalKey]struct{}{}
		f.byCred[e.cred] = set
	}
	set[k] = struct{}{}
}

// succeeded forgets every final answer of the credential: the upstream
// answered it with a success, so its repeats go through again.
func (f *finals) succeeded(c credKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.byCred[c] {
		delete(f.byKey, k)
	}
	delete(f.byCred, c)
}

// evict drops the expired answers, and the oldest one when none was.
// f.mu is held.
func (f *finals) evict() {
	now := f.now()
	var oldestKey finalKey
	var oldest *final
	for k, e := range f.byKey {
		if now.Sub(e.at) >= f.window {
			f.drop(k, e)
			continue
		}
		if oldest == nil || e.at.Before(oldest.at) {
			oldestKey, oldest = k, e
		}
	}
	if len(f.byKey) >= maxFinals && oldest != nil {
		f.drop(oldestKey, oldest)
	}
}

// drop forgets k; f.mu is held.
func (f *finals) drop(k finalKey, e *final) {
	delete(f.byKey, k)
	if set := f.byCred[e.cred]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(f.byCred, e.cred)
		}
	}
}

// replayedHeaders are the response headers a repeated final answer keeps.
// X-Recourse-Quota-Remaining is not among them: a replay consults no
// quota, so the count it carried then would be stale.
var replayedHeaders = []string{"Content-Type", retry.HeaderShouldRetry, retry.HeaderOutcome, HeaderCallID}

// remembers reports whether a completion answer is a final failure to
// repeat: a status other than 2xx with an outcome (recovery ended without
// success), other than cancelled (the client went away or the proxy is
// stopping: nothing was decided about the upstream).
func remembers(status int, h http.Header) bool {
	o := h.Get(retry.HeaderOutcome)
	return status/100 != 2 && status != 0 && o != "" && o != string(event.OutcomeCancelled)
}

// owned serves the completion endpoint as the only retry owner: a request
// that repeats one whose final failure the proxy answered within the
// window, with no success for its credential since, is answered that same
// answer without contacting the upstream; any other request goes to
// complete, and its answer is remembered when it is a final failure.
func (h *Handler) owned(w http.ResponseWriter, r *http.Request) {
	if h.finals == nil || r.ContentLength > h.maxBody {
		// complete refuses a declared length over the limit before
		// reading a byte (R21.9).
		h.complete(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.maxBody+1))
	if err != nil || int64(len(body)) > h.maxBody {
		// complete answers the unreadable or oversized body.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		h.complete(w, r)
		return
	}
	k, c := keys(r, body)
	if e := h.finals.lookup(k); e != nil {
		h.replay(w, r, e)
		return
	}
	r.Body = &readBody{Reader: bytes.NewReader(body), b: body}
	cw := &captureWriter{ResponseWriter: w, now: h.now}
	h.complete(cw, r)
	switch {
	case cw.status/100 == 2:
		h.finals.succeeded(c)
	case remembers(cw.status, cw.header) && !cw.overflow:
		h.finals.remember(k, &final{at: cw.at, cred: c, status: cw.status, header: cw.header, body: cw.body.Bytes()})
	}
}

// replay writes a remembered final answer.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, e *final) {
	start := time.Now()
	hd := w.Header()
	for k, v := range e.header {
		hd[k] = append([]string(nil), v...)
	}
	hd.Set(HeaderReplayed, "true")
	hd.Set("Content-Length", strconv.Itoa(len(e.body)))
	var none tally // a repeat from memory sends nothing (R21.7)
	none.set(hd)
	w.WriteHeader(e.status)
	w.Write(e.body)
	h.clientRetry(r.Context(), ClientRetryReplayed)
	// A remembered answer always has an outcome (isFinal).
	h.logRequest(r, requestLine{kind: "completion", status: e.status, outcome: e.header.Get(retry.HeaderOutcome),
		clientRetry: true, replayed: true, callID: e.header.Get(HeaderCallID), start: start, tally: &none})
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// captureWriter passes a completion's answer to the client and keeps its
// status, the headers a replay repeats, and up to maxFinalBytes of body.
type captureWriter struct {
	http.ResponseWriter
	now      func() time.Time
	status   int
	at       time.Time // when the status was written
	header   http.Header
	body     bytes.Buffer
	overflow bool
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 && code >= 200 {
		c.status = code
		c.at = c.now()
		c.header = http.Header{}
		for _, name := range replayedHeaders {
			if v := c.ResponseWriter.Header().Values(name); len(v) > 0 {
				c.header[name] = append([]string(nil), v...)
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.status/100 != 2 && !c.overflow {
		if c.body.Len()+len(p) > maxFinalBytes {
			c.overflow = true
			c.body = bytes.Buffer{}
		} else {
			c.body.Write(p)
		}
	}
	return c.ResponseWriter.Write(p)
}

// FlushError flushes a 2xx answer. An answer of another status is a final
// error document, held until the handler returns, so that it is
// remembered before its client can read its end and repeat it.
func (c *captureWriter) FlushError() error {
	if c.status/100 != 2 && c.status != 0 {
		return nil
	}
	return http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
