package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/recoursetest"
)

// fallbackBench is the fallback comparison: the same drop-in calls, whose
// first target answers, through the default chain with and without the
// fallback layer (one fallback target, another model).
type fallbackBench struct {
	unaryWith, unaryNone, streamWith, streamNone side
	// unaryFloor is the unary call through the default chain below the
	// fallback layer's floor (floorFallback, floor_test.go).
	unaryFloor side
}

func newFallbackBench(tb testing.TB) *fallbackBench {
	answer := []byte(recoursetest.OpenAIChat("Hello! How can I help you today?"))
	events := recoursetest.OpenAIStream(contents(streamChunks)...)
	payload := []byte(strings.Join(events, ""))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		req, _ := io.ReadAll(r.Body)
		if bytes.Contains(req, []byte(`"stream":true`)) {
			sseHeaders(w)
			_, _ = w.Write(payload)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	codec := openai.New()
	fb, err := fallback.New(fallback.Config{Codec: codec, Targets: []fallback.Target{{Model: "gpt-4o-mini"}}})
	if err != nil {
		tb.Fatal(err)
	}
	withFallback, err := chain.Default(codec, chain.WithPerCall(fb))
	if err != nil {
		tb.Fatal(err)
	}
	with, none := &http.Client{Transport: withFallback}, &http.Client{Transport: recourseChain(tb)}
	url := srv.URL + "/v1/chat/completions"
	unaryBody, streamBody := encoded(tb, false), encoded(tb, true)
	unary := func(name string, c *http.Client) side {
		return timed(name, func() error {
			resp, err := post(c, url, unaryBody)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || n != int64(len(answer))) {
				err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
			}
			return err
		})
	}
	br := bufio.NewReader(nil)
	stream := func(name string, c *http.Client) side {
		return timed(name, func() error {
			resp, err := post(c, url, streamBody)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			n, done := 0, false
			err = readLines(resp.Body, br, func(p []byte) bool {
				n++
				done = string(p) == "[DONE]"
				return true
			})
			if err == nil && (n != len(events) || !done) {
				err = errors.New("short stream")
			}
			return err
		})
	}
	return &fallbackBench{
		unaryWith:  unary("fallback", with),
		unaryNone:  unary("none", none),
		unaryFloor: unary("floor", &http.Client{Transport: floorFallback{next: recourseChain(tb)}}),
		streamWith: stream("fallback", with),
		streamNone: stream("none", none),
	}
}

// BenchmarkFallback compares drop-in calls whose first target answers
// through the default chain plus the fallback layer (layers/fallback, one
// target of another model, never used) with the same calls through the
// default chain alone: a small completion (unary) and a 1000-chunk stream
// (stream1000), both as an http.Client's Transport. It reports the usual
// ratio figures and diff-ns/op, the median per-call difference (fallback
// minus none); extra-allocs/op is the layer's allocations per call.
func BenchmarkFallback(b *testing.B) {
	f := newFallbackBench(b)
	b.Run("unary/ratio", func(b *testing.B) {
		t := compare(b, 16, f.unaryWith, f.unaryNone)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
	b.Run("unary/floor", func(b *testing.B) {
		t := compare(b, 16, f.unaryWith, f.unaryNone, f.unaryFloor)
		reportFloor(b, t, "none")
	})
	b.Run("stream1000/ratio", func(b *testing.B) {
		t := compare(b, 1, f.streamWith, f.streamNone)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
}
