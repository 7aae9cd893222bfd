package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// stallLimits are the limits of BenchmarkStall: all three on, each far
// above anything a loopback call waits, so that none fires.
var stallLimits = stall.Limits{Header: time.Minute, FirstOutput: time.Minute, Idle: time.Minute}

// optIn is the opt-in layer comparison: the same native call through the
// default chain with and without a layer, unary and streamed.
type optIn struct {
	unaryWith, unaryNone, streamWith, streamNone side
	// unaryFloor is the unary call through the default chain plus the
	// stall limits' floor (floorStall, floor_test.go).
	unaryFloor side
}

func newStallBench(tb testing.TB) *optIn {
	answer := []byte(recoursetest.OpenAIChat("Hello!"))
	payload := []byte(strings.Join(recoursetest.OpenAIStream(contents(streamChunks)...), ""))
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
	st, err := stall.New(stallLimits)
	if err != nil {
		tb.Fatal(err)
	}
	withStall, err := chain.Default(openai.New(), chain.WithPerAttempt(st))
	if err != nil {
		tb.Fatal(err)
	}
	floorChain, err := chain.Default(openai.New(), chain.WithPerAttempt(floorStall{limit: time.Minute}))
	if err != nil {
		tb.Fatal(err)
	}
	cl := func(ch *chain.Chain, base string) *client.Client {
		c, err := client.New(base, ch, client.WithAPIKey("sk-bench"))
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	unary := func(name string, c *client.Client) side {
		return timed(name, func() error {
			comp, err := c.Complete(context.Background(), chatRequest)
			if err == nil && comp.Message.Content != "Hello!" {
				err = errors.New("wrong answer")
			}
			return err
		})
	}
	stream := func(name string, c *client.Client) side {
		s := nativeStreamSide(c, streamChunks)
		s.name = name
		return s
	}
	return &optIn{
		unaryWith:  unary("stall", cl(withStall, srv.URL)),
		unaryNone:  unary("none", cl(recourseChain(tb), srv.URL)),
		unaryFloor: unary("floor", cl(floorChain, srv.URL)),
		streamWith: stream("stall", cl(withStall, srv.URL)),
		streamNone: stream("none", cl(recourseChain(tb), srv.URL)),
	}
}

// BenchmarkStall compares native calls through the default chain plus a
// stall layer with all three limits on (layers/stall; none fires) with the
// same calls through the default chain alone: a small completion (unary)
// and a 1000-chunk stream (stream1000). It reports the usual ratio figures
// and diff-ns/op, the median per-call difference (stall minus none);
// extra-allocs/op of stream1000 divided by its 1000 chunks is the layer's
// cost per frame.
func BenchmarkStall(b *testing.B) {
	s := newStallBench(b)
	b.Run("unary/ratio", func(b *testing.B) {
		t := compare(b, 16, s.unaryWith, s.unaryNone)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
	b.Run("unary/floor", func(b *testing.B) {
		t := compare(b, 16, s.unaryWith, s.unaryNone, s.unaryFloor)
		reportFloor(b, t, "none")
	})
	b.Run("stream1000/ratio", func(b *testing.B) {
		t := compare(b, 1, s.streamWith, s.streamNone)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
		b.ReportMetric((t[0].allocs-t[1].allocs)/streamChunks, "extra-allocs/frame")
	})
}
