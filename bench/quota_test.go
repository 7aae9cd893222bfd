package bench

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/recoursetest"
)

// BenchmarkQuotaCall compares a successful native completion through the
// default chain with the same call through the default chain plus the
// retry quota (layers/quota, in-process store): the quota's cost on the
// success path of a whole call. diff-ns/op is the median per-call time
// difference (quota minus none).
func BenchmarkQuotaCall(b *testing.B) {
	answer := []byte(recoursetest.OpenAIChat("Hello!"))
	srv := server(b, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	q, err := quota.New(quota.WithStore(quota.NewMemoryStore()))
	if err != nil {
		b.Fatal(err)
	}
	withQuota, err := chain.Default(openai.New(), chain.WithPerCall(q))
	if err != nil {
		b.Fatal(err)
	}
	qc, err := client.New(srv.URL, withQuota, client.WithAPIKey("sk-bench"))
	if err != nil {
		b.Fatal(err)
	}
	plain := nativeClient(b, srv.URL)
	call := func(c *client.Client) func() error {
		return func() error {
			comp, err := c.Complete(context.Background(), chatRequest)
			if err == nil && comp.Message.Content != "Hello!" {
				err = errors.New("wrong answer")
			}
			return err
		}
	}
	none, with := timed("none", call(plain)), timed("quota", call(qc))
	b.Run("none", func(b *testing.B) { leaf(b, none) })
	b.Run("quota", func(b *testing.B) { leaf(b, with) })
	b.Run("ratio", func(b *testing.B) {
		t := compare(b, 16, with, none)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
}

// BenchmarkQuotaStage measures the quota's own work per call on the
// success path, without the network: the quota layer placing its gate in
// the call's layer.Call (the native client's), then what the engine does
// with it on a call that never resends — Bind, Deposit and the cooldown
// horizon's local read — against the same round trip without the layer.
func BenchmarkQuotaStage(b *testing.B) {
	q, err := quota.New(quota.WithStore(quota.NewMemoryStore()))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("https://api.openai.com/v1/chat/completions")
	req := (&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}).WithContext(context.Background())
	lc := &layer.Call{}
	req = req.WithContext(layer.WithCall(req.Context(), lc))
	var sink time.Time
	engine := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if g := layer.CallFrom(r.Context()).Gate; g != nil {
			ug := g.Bind(r.URL, "gpt-4o-mini", r.Header)
			ug.Deposit()
			sink = ug.Horizon()
		}
		return nil, nil
	})
	stage := q.Wrap(engine)
	run := func(rt http.RoundTripper) func() error {
		return func() error {
			lc.Gate = nil
			_, err := rt.RoundTrip(req)
			return err
		}
	}
	none, with := timed("none", run(engine)), timed("quota", run(stage))
	b.Run("none", func(b *testing.B) { leaf(b, none) })
	b.Run("quota", func(b *testing.B) { leaf(b, with) })
	b.Run("ratio", func(b *testing.B) {
		t := compare(b, 1024, with, none)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
	_ = sink
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
