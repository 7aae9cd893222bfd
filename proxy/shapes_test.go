package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The failure shapes an operator meets, through a proxy set up as one
// would: three attempts, 30 s header and first-output limits, one fallback
// model on a second upstream. Each answer's virtual time, its body and the
// requests each upstream saw are the attempts recourse chose.

// fallbackChat is the fallback upstream's whole answer: its own model name
// and usage, which must reach the client as they are.
const fallbackChat = `{"id":"chatcmpl-fb","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"from the fallback"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":31,"completion_tokens":41,"total_tokens":72}}`

// fallbackStream is the fallback upstream's streamed answer, with its own
// model name and usage.
func fallbackStream() recoursetest.Step {
	var evs []string
	for _, e := range recoursetest.OpenAIStream("from the fallback") {
		e = strings.ReplaceAll(e, `"model":"`+recoursetest.OpenAIModel+`"`, `"model":"gpt-4o-2024-08-06"`)
		e = strings.ReplaceAll(e, `"total_tokens":19`, `"total_tokens":72`)
		evs = append(evs, e)
	}
	return recoursetest.SSE(evs...)
}

// shapeRig is a proxy in front of a primary and a fallback memory upstream.
type shapeRig struct {
	primary, fb *recoursetest.Server
	proxy       *httptest.Server
	client      *http.Client
	logs        *syncBuffer
}

// shapeConfig is the operator's setup: three attempts with backoff on the
// bubble's clock (jitter 1: 100 ms, 200 ms), 30 s header and first-output
// limits, the binary's default retry quota, and the fallback model gpt-4o
// on the second upstream.
func shapeConfig(t *testing.T, primary, fb string, lim stall.Limits, logs io.Writer) Config {
	p := testPolicy(&sleeps{})
	p.Sleep = nil
	p.MaxAttempts = 3
	return Config{
		Provider:   "openai",
		Upstream:   primary,
		Policy:     p,
		PerAttempt: stallLayer(t, lim),
		Fallback:   []fallback.Target{{Upstream: fb, Model: "gpt-4o"}},
		Quota:      privateQuota(t), // the binary's default: -quota with its ratio, window, floor and cooldown
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

var operatorLimits = stall.Limits{Header: 30 * time.Second, FirstOutput: 30 * time.Second}

// newShapeRig starts the two upstreams and the proxy in the bubble; edit
// changes the operator's Config.
func newShapeRig(t *testing.T, edit func(*Config), primary, fb []recoursetest.Step) *shapeRig {
	t.Helper()
	r := &shapeRig{primary: recoursetest.NewMemoryServer(primary...), fb: recoursetest.NewMemoryServer(fb...), logs: &syncBuffer{}}
	t.Cleanup(r.primary.Close)
	t.Cleanup(r.fb.Close)
	r.serve(t, r.primary.URL, r.fb.URL, edit)
	return r
}

func (r *shapeRig) serve(t *testing.T, primary, fb string, edit func(*Config)) {
	t.Helper()
	dial := recoursetest.NewMemoryServer() // only for its transport, which reaches every memory server
	t.Cleanup(dial.Close)
	upstream := dial.Transport()
	t.Cleanup(upstream.CloseIdleConnections)
	cfg := shapeConfig(t, primary, fb, operatorLimits, r.logs)
	cfg.Transport = upstream
	if edit != nil {
		edit(&cfg)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	px, tr := recoursetest.ServeMemory(h)
	r.proxy = px
	t.Cleanup(func() {
		px.CloseClientConnections()
		px.Close()
	})
	tr.DisableCompression = true
	r.client = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
}

// post sends body and reads the whole answer; a request has no deadline:
// one that never ends fails the bubble as a deadlock.
func (r *shapeRig) post(t *testing.T, body string) result {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.proxy.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: rerr}
}

// oneAnswer asserts that a body holds at most one answer: one JSON
// document, or one stream with at most one end marker and one finish.
func oneAnswer(t *testing.T, body string) {
	t.Helper()
	assert.LessOrEqual(t, strings.Count(body, "data: [DONE]"), 1, "two answers in one body")
	assert.LessOrEqual(t, strings.Count(body, `"finish_reason":"stop"`), 1, "two answers in one body")
	assert.LessOrEqual(t, strings.Count(body, `"object":"chat.completion"`), 1, "two answers in one body")
}

func TestR20_15_ShapesThroughTheProxy(t *testing.T) {
	never := func(t *testing.T) <-chan struct{} {
		ch := make(chan struct{})
		t.Cleanup(func() { close(ch) })
		return ch
	}
	after := func(d time.Duration) <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(d, func() { close(ch) })
		return ch
	}
	fbStream := recoursetest.SSE(recoursetest.OpenAIStream("from the fallback")...)
	okChat := recoursetest.JSON(200, recoursetest.OpenAIChat("from the primary"))
	overloaded := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))

	for _, tc := range []struct {
		name string
		// steps build the upstreams' scripts inside the bubble.
		steps  func(t *testing.T) (primary, fb []recoursetest.Step)
		edit   func(t *testing.T, c *Config)
		stream bool
		// want: the virtual time of the answer, its status, what its body
		// holds and must not hold, and the requests of each upstream.
		at               time.Duration
		status           int
		has, hasNot      []string
		primaryN, fallbN int
		// incomplete: the stream failed; it ends with an in-band error and
		// the connection is aborted, so the client cannot take it as whole.
		incomplete bool
	}{
		{
			name: "ShapeSlowFirstTokenFailsOverOnTheFirstOutputLimit",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("too late")...).Gated(0, after(20*time.Second))},
					[]recoursetest.Step{fbStream}
			},
			edit: func(t *testing.T, c *Config) {
				c.PerAttempt = stallLayer(t, stall.Limits{Header: 30 * time.Second, FirstOutput: 10 * time.Second})
				c.FallbackRules.Stalls = []event.StallLimit{event.StallFirstOutput}
			},
			stream: true, at: 10 * time.Second, status: 200,
			has: []string{`"from the fallback"`, "data: [DONE]"}, hasNot: []string{"too late", "error"},
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSlowFirstTokenWithoutTheLimitIsTheSlowAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("slow but whole")...).Gated(0, after(20*time.Second))},
					[]recoursetest.Step{fbStream}
			},
			edit: func(t *testing.T, c *Config) {
				c.PerAttempt = stallLayer(t, stall.Limits{Header: 30 * time.Second})
				c.FallbackRules.Stalls = []event.StallLimit{event.StallFirstOutput}
			},
			stream: true, at: 20 * time.Second, status: 200,
			has: []string{`"slow but whole"`, "data: [DONE]"}, hasNot: []string{"from the fallback", "error"},
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeSilentProviderFailsOverAfterOneHeaderTimeout",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))},
					[]recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			edit: func(t *testing.T, c *Config) {
				c.FallbackRules.Stalls = []event.StallLimit{event.StallHeader}
			},
			at: 30 * time.Second, status: 200, has: []string{"from the fallback"}, hasNot: []string{"never sent"},
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSilentProviderFailsOverWhenTheQuotaRefusesResends",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))},
					[]recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			edit: func(t *testing.T, c *Config) {
				c.Quota = privateQuota(t, quota.WithRatio(0), quota.WithFloor(0))
				c.FallbackRules.Stalls = []event.StallLimit{event.StallHeader}
			},
			at: 30 * time.Second, status: 200, has: []string{"from the fallback"}, hasNot: []string{"never sent"},
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSilentProviderWithoutStallFailOverSpendsTheAttempts",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				s := recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))
				return []recoursetest.Step{s, s, s}, []recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			at: 90*time.Second + 300*time.Millisecond, status: 200, has: []string{"from the fallback"}, hasNot: []string{"never sent"},
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeRateLimitedWithRetryAfterIsHonouredThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", "7"), okChat}, nil
			},
			at: 7 * time.Second, status: 200, has: []string{"from the primary"}, hasNot: []string{"slow down"},
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeRateLimitedWithoutRetryAfterBacksOffThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down")), okChat}, nil
			},
			at: 100 * time.Millisecond, status: 200, has: []string{"from the primary"}, hasNot: []string{"slow down"},
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeUnavailableEveryAttemptThenTheFallbacksAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{overloaded, overloaded, overloaded}, []recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			at: 300 * time.Millisecond, status: 200,
			has:      []string{`"model":"gpt-4o-2024-08-06"`, `"total_tokens":72`, "from the fallback"},
			hasNot:   []string{"overloaded"},
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeStreamUnavailableEveryAttemptThenTheFallbacksAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{overloaded, overloaded, overloaded}, []recoursetest.Step{fallbackStream()}
			},
			stream: true, at: 300 * time.Millisecond, status: 200,
			has:      []string{`"model":"gpt-4o-2024-08-06"`, `"total_tokens":72`, `"from the fallback"`, "data: [DONE]"},
			hasNot:   []string{"overloaded", recoursetest.OpenAIModel},
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeStreamRateLimitedWithRetryAfterIsHonouredThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", "7"),
					recoursetest.SSE(recoursetest.OpenAIStream("from the primary")...)}, nil
			},
			stream: true, at: 7 * time.Second, status: 200, has: []string{`"from the primary"`, "data: [DONE]"}, hasNot: []string{"slow down"},
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeStreamResetBeforeHeadersIsRetried",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.Reset(), recoursetest.SSE(recoursetest.OpenAIStream("from the primary")...)}, nil
			},
			stream: true, at: 100 * time.Millisecond, status: 200, has: []string{`"from the primary"`, "data: [DONE]"},
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeStreamSilentProviderFailsOverAfterOneHeaderTimeout",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("never sent")...).Gated(-1, never(t))},
					[]recoursetest.Step{fallbackStream()}
			},
			edit: func(t *testing.T, c *Config) {
				c.FallbackRules.Stalls = []event.StallLimit{event.StallHeader}
			},
			stream: true, at: 30 * time.Second, status: 200, has: []string{`"from the fallback"`, `"model":"gpt-4o-2024-08-06"`, "data: [DONE]"}, hasNot: []string{"never sent"},
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeResetBeforeHeadersIsRetried",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.Reset(), okChat}, nil
			},
			at: 100 * time.Millisecond, status: 200, has: []string{"from the primary"},
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeCutAfterOutputEndsInBandWithoutFallback",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				evs := recoursetest.OpenAIStream("said once", " never finished")
				return []recoursetest.Step{recoursetest.SSE(evs...).Cut(len(evs[0]) + len(evs[1]) + 3)}, []recoursetest.Step{fbStream}
			},
			stream: true, at: 0, status: 200, incomplete: true,
			has: []string{`"said once"`, "semantic_output"}, hasNot: []string{"never finished", "from the fallback", "data: [DONE]"},
			primaryN: 1, fallbN: 0,
		},
		{
			// A protocol error is not eligible (R4.5) and is no outcome the
			// rules fall back on (R20.2): the stream ends in band, once,
			// with nothing of the malformed event and nothing resent.
			name: "ShapeMalformedEventBeforeOutputEndsInBandUnresent",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				evs := recoursetest.OpenAIStream("not read")
				bad := recoursetest.SSE(append([]string{"data: {\"choices\":[{\"delta\":\n\n"}, evs...)...)
				return []recoursetest.Step{bad, recoursetest.SSE(recoursetest.OpenAIStream("must not be asked")...)}, []recoursetest.Step{fbStream}
			},
			stream: true, at: 0, status: 200, incomplete: true,
			has: []string{"protocol/malformed"}, hasNot: []string{"not read", "must not be asked", "from the fallback", `"delta":` + "\n", "data: [DONE]"},
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeFinishWithoutEndMarkerIsAnErrorNamingTheMarker",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				evs := recoursetest.OpenAIStream("finished", " but unterminated")
				s := recoursetest.SSE(evs[:len(evs)-1]...)
				s.EndWithoutTerminator = true
				return []recoursetest.Step{s}, []recoursetest.Step{fbStream}
			},
			stream: true, at: 0, status: 200, incomplete: true,
			has: []string{`"finished"`, "the stream ended after its finish without its end marker"}, hasNot: []string{"from the fallback", "data: [DONE]"},
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeContextLengthExceededFallsBack",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "context_length_exceeded", "too long"))},
					[]recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			edit: func(t *testing.T, c *Config) {
				c.FallbackRules.Codes = []string{"context_length_exceeded"}
				c.FallbackRules.NeverCodes = []string{"content_policy_violation"}
			},
			at: 0, status: 200, has: []string{"from the fallback", `"model":"gpt-4o-2024-08-06"`}, hasNot: []string{"too long"},
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeContentPolicyViolationReachesTheCallerUnrouted",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused"))},
					[]recoursetest.Step{recoursetest.JSON(200, fallbackChat)}
			},
			edit: func(t *testing.T, c *Config) {
				c.FallbackStatuses = []int{400}
				c.FallbackRules.Codes = []string{"context_length_exceeded"}
				c.FallbackRules.NeverCodes = []string{"content_policy_violation"}
			},
			at: 0, status: 400, has: []string{recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused")},
			hasNot:   []string{"from the fallback"},
			primaryN: 1, fallbN: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, f := tc.steps(t)
				r := newShapeRig(t, func(c *Config) {
					if tc.edit != nil {
						tc.edit(t, c)
					}
				}, p, f)
				body := chatBody
				if tc.stream {
					body = streamBody
				}
				start := time.Now()
				got := r.post(t, body)
				assert.Equal(t, tc.at, time.Since(start), "the virtual time of the answer")
				if tc.incomplete {
					assert.ErrorIs(t, got.err, io.ErrUnexpectedEOF, "an answer that failed is never passed off as complete")
					assert.Contains(t, got.body, `"type":"recourse_error"`, "the in-band error frame")
					assert.Equal(t, 1, strings.Count(got.body, `"error":`), "one in-band error")
				} else {
					require.NoError(t, got.err, "the proxy's answer ends properly")
				}
				assert.Equal(t, tc.status, got.status)
				for _, s := range tc.has {
					assert.Contains(t, got.body, s)
				}
				for _, s := range tc.hasNot {
					assert.NotContains(t, got.body, s)
				}
				oneAnswer(t, got.body)
				assert.Equal(t, tc.primaryN, r.primary.Count(), "requests to the primary")
				assert.Equal(t, tc.fallbN, r.fb.Count(), "requests to the fallback")
				for _, q := range r.fb.Requests() {
					var m struct{ Model string }
					require.NoError(t, json.Unmarshal(q.Body, &m))
					assert.Equal(t, "gpt-4o", m.Model, "the fallback target's model")
				}
			})
		})
	}
}

// A 60 s outage of the primary, 20 calls 4 s apart: every call is
// answered, by the fallback while the primary is down, and by the primary
// again from the first call after it recovers — the quota's shared
// cooldown keeps no call away from it beyond what its Retry-After said.
func TestR20_15_ShapeOutageFallsBackAndRecoversAtOnce(t *testing.T) {
	for name, retryAfter := range map[string]string{"with Retry-After": "2", "without Retry-After": ""} {
		t.Run(name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { testOutage(t, retryAfter) }) })
	}
}

func testOutage(t *testing.T, retryAfter string) {
	start := time.Now()
	const outage = 60 * time.Second
	var mu sync.Mutex
	var primaryAt []time.Duration
	fbN := 0
	primary, _ := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		at := time.Since(start)
		mu.Lock()
		primaryAt = append(primaryAt, at)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if at < outage {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(503)
			_, _ = io.WriteString(w, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
			return
		}
		_, _ = io.WriteString(w, recoursetest.OpenAIChat("from the primary"))
	}))
	fb, _ := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		fbN++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, fallbackChat)
	}))
	for _, s := range []*httptest.Server{primary, fb} {
		t.Cleanup(func() { s.CloseClientConnections(); s.Close() })
	}
	r := &shapeRig{logs: &syncBuffer{}}
	r.serve(t, primary.URL, fb.URL, nil)

	const calls = 20
	got := make([]result, calls)
	at := make([]time.Duration, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 4 * time.Second)
			got[i] = r.post(t, chatBody)
			at[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i := range calls {
		sent := time.Duration(i) * 4 * time.Second
		require.NoError(t, got[i].err)
		assert.Equal(t, 200, got[i].status, "call %d at %v answered", i, sent)
		oneAnswer(t, got[i].body)
		switch {
		case sent+4*time.Second < outage:
			assert.Contains(t, got[i].body, "from the fallback", "call %d at %v, during the outage", i, sent)
		case sent >= outage:
			assert.Contains(t, got[i].body, "from the primary", "call %d at %v, after the outage", i, sent)
			assert.Equal(t, sent, at[i], "call %d answered at once", i)
		}
	}
	byFallback, byPrimary := 0, 0
	for _, g := range got {
		if strings.Contains(g.body, "from the fallback") {
			byFallback++
		} else {
			byPrimary++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var recovered []time.Duration
	for _, a := range primaryAt {
		if a >= outage {
			recovered = append(recovered, a)
		}
	}
	require.NotEmpty(t, recovered)
	assert.Equal(t, outage, recovered[0], "the primary is asked again the moment it recovers")
	assert.Len(t, recovered, byPrimary, "one request per call the recovered primary answered")
	assert.Equal(t, byFallback, fbN, "one fallback request per call it answered")
}

// A fallback target's own Stalls reach the proxy's fallback layer
// (R20.16): with the rules leaving a target on a header stall, a target
// whose own list is empty is kept to its three attempts, and the next
// target answers after them.
func TestR20_16_ProxyTargetStallsOverrideTheRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		never := make(chan struct{})
		defer close(never)
		silent := recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never)
		r := newShapeRig(t, nil, []recoursetest.Step{silent}, []recoursetest.Step{silent, silent, silent})
		b := recoursetest.NewMemoryServer(recoursetest.JSON(200, fallbackChat))
		t.Cleanup(b.Close)
		r.serve(t, r.primary.URL, r.fb.URL, func(c *Config) {
			c.Fallback = []fallback.Target{{Upstream: r.fb.URL, Model: "gpt-4o", Stalls: []event.StallLimit{}}, {Upstream: b.URL, Model: "gpt-4o"}}
			c.FallbackRules.Stalls = []event.StallLimit{event.StallHeader}
		})
		start := time.Now()
		got := r.post(t, chatBody)
		assert.Equal(t, 30*time.Second+90*time.Second+300*time.Millisecond, time.Since(start))
		require.NoError(t, got.err)
		assert.Contains(t, got.body, "from the fallback")
		assert.Equal(t, 1, r.primary.Count(), "the primary left after one header timeout")
		assert.Equal(t, 3, r.fb.Count(), "the first target kept to its attempts")
		assert.Equal(t, 1, b.Count())
	})
}
