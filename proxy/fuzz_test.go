package proxy

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/recourse-dev/recourse/internal/scripted"
)

// FuzzCompletion sends arbitrary bodies and query strings to the
// completion endpoint of each dialect: the proxy never panics, always
// answers with a status, and what it writes itself is a valid answer.
func FuzzCompletion(f *testing.F) {
	f.Add([]byte(chatBody), "", uint8(0))
	f.Add([]byte(streamBody), "a=b", uint8(0))
	f.Add([]byte(ollamaBody), "", uint8(1))
	f.Add([]byte(`{"model":`), "%zz", uint8(2))
	f.Add([]byte{0xff, 0xfe, '{'}, "", uint8(1))
	providers := []string{"openai", "ollama", "omlx"}
	up := scripted.New()
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
		req.URL.RawQuery = query
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
	})
}
