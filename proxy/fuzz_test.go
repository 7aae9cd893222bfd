package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// upstreamMark is the header the fuzz target's upstream sets on every
// answer, so that a body the upstream wrote (and the proxy passed through)
// can be told from one the proxy wrote itself.
const upstreamMark = "X-Fuzz-Upstream"

// upstreamBody is every answer of the fuzz target's upstream: an error the
// proxy passes through untouched.
const upstreamBody = `{"error":{"message":"overloaded","type":"server_error","param":null,"code":"server_error"}}`

// FuzzCompletion sends arbitrary bodies and query strings to the
// completion endpoint of each dialect: the proxy never panics, always
// answers with a status, an upstream answer (or its repeat, R21.3) keeps
// the upstream's body, every body it writes itself is an error document
// of its dialect (OpenAI's {"error":{"message","type","param","code"}} with
// type recourse_error, Ollama's {"error":"…"}), and every answer's
// Content-Length, when set, is the length of its body.
func FuzzCompletion(f *testing.F) {
	f.Add([]byte(chatBody), "", uint8(0))
	f.Add([]byte(streamBody), "a=b", uint8(0))
	f.Add([]byte(ollamaBody), "", uint8(1))
	f.Add([]byte(`{"model":`), "%zz", uint8(2))
	f.Add([]byte{0xff, 0xfe, '{'}, "", uint8(1))
	f.Add(bytes.Repeat([]byte("x"), 5000), "", uint8(0))
	providers := []string{"openai", "ollama", "omlx", "anthropic"}
	// A loopback upstream scripting one fixed provider answer, every time.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(upstreamMark, "1")
		w.Header().Set("Content-Length", strconv.Itoa(len(upstreamBody)))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(upstreamBody))
	}))
	f.Cleanup(up.Close)
	handlers := map[string]*Handler{}
	for _, p := range providers {
		h, err := New(Config{Provider: p, Upstream: up.URL, MaxBodyBytes: 4096})
		if err != nil {
			f.Fatal(err)
		}
		handlers[p] = h
	}
	f.Fuzz(func(t *testing.T, body []byte, query string, which uint8) {
		p := providers[int(which)%len(providers)]
		h := handlers[p]
		req := httptest.NewRequest(http.MethodPost, "http://proxy"+h.codec.Path(), bytes.NewReader(body))
		req.URL.RawQuery = requestLineSafe(query)
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if r := recover(); r != nil && r != http.ErrAbortHandler {
					t.Fatalf("panic: %v", r)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		got := rec.Body.Bytes()
		if cl := rec.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(got)) {
			t.Fatalf("Content-Length %s for a body of %d bytes", cl, len(got))
		}
		if rec.Header().Get(upstreamMark) != "" || rec.Header().Get(HeaderReplayed) == "true" {
			// The upstream's answer, or the repeat of it that the proxy's
			// memory of final answers gives an identical request (R21.3):
			// its body as the upstream wrote it.
			if string(got) != upstreamBody {
				t.Fatalf("the upstream's body was changed: %q", got)
			}
			return
		}
		if rec.Code == http.StatusOK && rec.Header().Get("Content-Type") == "text/event-stream" {
			t.Fatalf("a stream committed with nothing from the upstream: %q", got)
		}
		assertErrorDocument(t, p, got)
	})
}

// requestLineSafe percent-encodes the bytes of q that no request line can
// carry (space, controls, '#', non-ASCII), as a client must before sending,
// and keeps every other byte — a malformed escape such as %zz included — as
// it is. The fuzz target builds its requests without an HTTP parser, so
// this keeps it to queries a server could receive.
func requestLineSafe(q string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c == '#' || c >= 0x7f {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// assertErrorDocument fails t unless b is one error document of provider's
// dialect, as the codec's ErrorDocument writes it.
func assertErrorDocument(t *testing.T, provider string, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	switch provider {
	case "ollama":
		var doc struct {
			Error *string `json:"error"`
		}
		if err := dec.Decode(&doc); err != nil || doc.Error == nil || *doc.Error == "" {
			t.Fatalf("not an Ollama error document (%v): %q", err, b)
		}
	case "anthropic":
		var doc struct {
			Type  string `json:"type"`
			Error *struct {
				Type    string  `json:"type"`
				Message *string `json:"message"`
			} `json:"error"`
		}
		if err := dec.Decode(&doc); err != nil || doc.Type != "error" || doc.Error == nil || doc.Error.Type == "" || doc.Error.Message == nil || *doc.Error.Message == "" {
			t.Fatalf("not an Anthropic error document (%v): %q", err, b)
		}
	default:
		var doc struct {
			Error *struct {
				Message *string         `json:"message"`
				Type    string          `json:"type"`
				Param   json.RawMessage `json:"param"`
				Code    *string         `json:"code"`
			} `json:"error"`
		}
		if err := dec.Decode(&doc); err != nil || doc.Error == nil || doc.Error.Message == nil || *doc.Error.Message == "" ||
			doc.Error.Type != "recourse_error" || string(doc.Error.Param) != "null" || doc.Error.Code == nil || *doc.Error.Code == "" {
			t.Fatalf("not an OpenAI error document (%v): %q", err, b)
		}
	}
	if dec.More() {
		t.Fatalf("more than one document: %q", b)
	}
}
