package chain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The failure shapes an operator meets (R20.15), through the library's two
// entry points: the drop-in chain with layers/fallback and the native
// client with client.WithFallback. The setup is the operator's: three
// attempts with backoff on the bubble's clock (jitter 1: 100 ms, 200 ms),
// 30 s header and first-output limits, the default retry quota, one
// fallback model on a second upstream.

// shapeFallbackChat is the fallback upstream's whole answer: its own model
// and usage, which must reach the caller as they are.
const shapeFallbackChat = `{"id":"chatcmpl-fb","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"from the fallback"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":31,"completion_tokens":41,"total_tokens":72}}`

// shapeFallbackStream is the fallback upstream's streamed answer, with its
// own model name and usage.
func shapeFallbackStream() recoursetest.Step {
	var evs []string
	for _, e := range recoursetest.OpenAIStream("from the fallback") {
		e = strings.ReplaceAll(e, `"model":"`+recoursetest.OpenAIModel+`"`, `"model":"gpt-4o-2024-08-06"`)
		e = strings.ReplaceAll(e, `"prompt_tokens":12,"completion_tokens":7,"total_tokens":19`, `"prompt_tokens":31,"completion_tokens":41,"total_tokens":72`)
		evs = append(evs, e)
	}
	return recoursetest.SSE(evs...)
}

// shapePolicy is the operator's policy on the bubble's clocks.
func shapePolicy() retry.Policy {
	return retry.Policy{MaxAttempts: 3, Jitter: func() float64 { return 1 }}
}

var shapeLimits = stall.Limits{Header: 30 * time.Second, FirstOutput: 30 * time.Second}

// shape is one failure shape and what each entry point must make of it.
type shape struct {
	name string
	// steps builds the primary's and the fallback's scripts in the bubble.
	steps  func(t *testing.T) (primary, fb []recoursetest.Step)
	limits *stall.Limits // nil: shapeLimits
	rules  fallback.Rules
	// quota is the retry quota's options on a private store; nil is the
	// defaults (the proxy binary's).
	quota  []quota.Option
	stream bool
	// at is the virtual time of the answer or the error.
	at time.Duration
	// text is the answer's content; "" when the call fails.
	text string
	// model is the answering model as the provider named it.
	model string
	// status is the drop-in's status (0: 200).
	status int
	// fails names what the error says; the answer is then not whole.
	fails string
	// told is the drop-in's text of a failed stream: what was delivered.
	told             string
	primaryN, fallbN int
}

func shapeTable() []shape {
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
	overloaded := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded"))
	codes := fallback.Rules{Statuses: []int{400}, Codes: []string{"context_length_exceeded"}, NeverCodes: []string{"content_policy_violation"}}
	const primaryModel = "gpt-4o-mini-2024-07-18"
	const fbModel = "gpt-4o-2024-08-06"
	return []shape{
		{
			name: "ShapeSlowFirstTokenFailsOverOnTheFirstOutputLimit",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("too late")...).Gated(0, after(20*time.Second))},
					[]recoursetest.Step{fbStream}
			},
			limits: &stall.Limits{Header: 30 * time.Second, FirstOutput: 10 * time.Second},
			rules:  fallback.Rules{Stalls: []event.StallLimit{event.StallFirstOutput}},
			stream: true, at: 10 * time.Second, text: "from the fallback", model: primaryModel,
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSlowFirstTokenWithoutTheLimitIsTheSlowAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("slow but whole")...).Gated(0, after(20*time.Second))},
					[]recoursetest.Step{fbStream}
			},
			limits: &stall.Limits{Header: 30 * time.Second},
			rules:  fallback.Rules{Stalls: []event.StallLimit{event.StallFirstOutput}},
			stream: true, at: 20 * time.Second, text: "slow but whole", model: primaryModel,
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeSilentProviderFailsOverAfterOneHeaderTimeout",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))},
					[]recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			rules: fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}},
			at:    30 * time.Second, text: "from the fallback", model: fbModel,
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSilentProviderFailsOverWhenTheQuotaRefusesResends",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))},
					[]recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			rules: fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}},
			quota: []quota.Option{quota.WithRatio(0), quota.WithFloor(0)},
			at:    30 * time.Second, text: "from the fallback", model: fbModel,
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeSilentProviderWithoutStallFailOverSpendsTheAttempts",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				s := recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never(t))
				return []recoursetest.Step{s, s, s}, []recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			at: 90*time.Second + 300*time.Millisecond, text: "from the fallback", model: fbModel,
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeRateLimitedWithRetryAfterIsHonouredThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", "7"), okStep("from the primary")}, nil
			},
			at: 7 * time.Second, text: "from the primary", model: primaryModel,
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeRateLimitedWithoutRetryAfterBacksOffThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down")), okStep("from the primary")}, nil
			},
			at: 100 * time.Millisecond, text: "from the primary", model: primaryModel,
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeUnavailableEveryAttemptThenTheFallbacksAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{overloaded, overloaded, overloaded}, []recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			at: 300 * time.Millisecond, text: "from the fallback", model: fbModel,
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeStreamUnavailableEveryAttemptThenTheFallbacksAnswer",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{overloaded, overloaded, overloaded}, []recoursetest.Step{shapeFallbackStream()}
			},
			stream: true, at: 300 * time.Millisecond, text: "from the fallback", model: fbModel,
			primaryN: 3, fallbN: 1,
		},
		{
			name: "ShapeStreamRateLimitedWithRetryAfterIsHonouredThenAnswered",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", "7"),
					recoursetest.SSE(recoursetest.OpenAIStream("from the primary")...)}, nil
			},
			stream: true, at: 7 * time.Second, text: "from the primary", model: primaryModel,
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeStreamResetBeforeHeadersIsRetried",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.Reset(), recoursetest.SSE(recoursetest.OpenAIStream("from the primary")...)}, nil
			},
			stream: true, at: 100 * time.Millisecond, text: "from the primary", model: primaryModel,
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeStreamSilentProviderFailsOverAfterOneHeaderTimeout",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.SSE(recoursetest.OpenAIStream("never sent")...).Gated(-1, never(t))},
					[]recoursetest.Step{shapeFallbackStream()}
			},
			rules:  fallback.Rules{Stalls: []event.StallLimit{event.StallHeader}},
			stream: true, at: 30 * time.Second, text: "from the fallback", model: fbModel,
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeResetBeforeHeadersIsRetried",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.Reset(), okStep("from the primary")}, nil
			},
			at: 100 * time.Millisecond, text: "from the primary", model: primaryModel,
			primaryN: 2, fallbN: 0,
		},
		{
			name: "ShapeCutAfterOutputEndsInBandWithoutFallback",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				evs := recoursetest.OpenAIStream("said once", " never finished")
				return []recoursetest.Step{recoursetest.SSE(evs...).Cut(len(evs[0]) + len(evs[1]) + 3)}, []recoursetest.Step{fbStream}
			},
			stream: true, fails: "semantic_output", told: "said once",
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeMalformedEventBeforeOutputEndsInBandUnresent",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				evs := recoursetest.OpenAIStream("not read")
				bad := recoursetest.SSE(append([]string{"data: {\"choices\":[{\"delta\":\n\n"}, evs...)...)
				return []recoursetest.Step{bad, recoursetest.SSE(recoursetest.OpenAIStream("must not be asked")...)}, []recoursetest.Step{fbStream}
			},
			stream: true, fails: "protocol/malformed",
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
			stream: true, fails: "without its end marker", told: "finished but unterminated",
			primaryN: 1, fallbN: 0,
		},
		{
			name: "ShapeContextLengthExceededFallsBack",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "context_length_exceeded", "too long"))},
					[]recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			rules: codes, text: "from the fallback", model: fbModel,
			primaryN: 1, fallbN: 1,
		},
		{
			name: "ShapeContentPolicyViolationReachesTheCallerUnrouted",
			steps: func(t *testing.T) ([]recoursetest.Step, []recoursetest.Step) {
				return []recoursetest.Step{recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "content_policy_violation", "refused"))},
					[]recoursetest.Step{recoursetest.JSON(200, shapeFallbackChat)}
			},
			rules: codes, status: 400, fails: "content_policy_violation",
			primaryN: 1, fallbN: 0,
		},
	}
}

// shapeServers starts the two upstreams in the bubble.
func shapeServers(t *testing.T, s shape) (primary, fb *recoursetest.Server) {
	p, f := s.steps(t)
	primary, fb = recoursetest.NewMemoryServer(p...), recoursetest.NewMemoryServer(f...)
	t.Cleanup(primary.Close)
	t.Cleanup(fb.Close)
	return primary, fb
}

// shapeLayers returns the stall layer of s and its quota, if any.
func shapeLayers(t *testing.T, s shape) (*stall.Layer, []layer.Layer) {
	lim := shapeLimits
	if s.limits != nil {
		lim = *s.limits
	}
	sl, err := stall.New(lim)
	require.NoError(t, err)
	ql, err := quota.New(append([]quota.Option{quota.WithStore(quota.NewMemoryStore())}, s.quota...)...)
	require.NoError(t, err)
	return sl, []layer.Layer{ql}
}

// assertAttempts asserts each upstream's request count and that the
// fallback was asked for its own model.
func assertAttempts(t *testing.T, s shape, primary, fb *recoursetest.Server) {
	t.Helper()
	assert.Equal(t, s.primaryN, primary.Count(), "requests to the primary")
	assert.Equal(t, s.fallbN, fb.Count(), "requests to the fallback")
	for _, q := range fb.Requests() {
		var m struct{ Model string }
		require.NoError(t, json.Unmarshal(q.Body, &m))
		assert.Equal(t, "gpt-4o", m.Model)
	}
}

func TestR20_15_ShapesThroughTheDropInChain(t *testing.T) {
	for _, s := range shapeTable() {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				primary, fb := shapeServers(t, s)
				sl, q := shapeLayers(t, s)
				fl, err := fallback.New(fallback.Config{Codec: openai.New(), Rules: s.rules,
					Targets: []fallback.Target{{Upstream: fb.URL, Model: "gpt-4o"}}})
				require.NoError(t, err)
				tr := primary.Transport()
				t.Cleanup(tr.CloseIdleConnections)
				ch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr),
					chain.WithPerCall(append([]layer.Layer{fl}, q...)...), chain.WithPerAttempt(sl))
				require.NoError(t, err)
				req := canaryRequest()
				req.Stream = s.stream
				body := encoded(t, req)
				hr, err := http.NewRequestWithContext(context.Background(), http.MethodPost, primary.URL+"/v1/chat/completions", strings.NewReader(string(body)))
				require.NoError(t, err)
				hr.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := (&http.Client{Transport: ch}).Do(hr)
				require.NoError(t, err)
				b, rerr := io.ReadAll(resp.Body)
				require.NoError(t, resp.Body.Close())
				got := string(b)
				assert.Equal(t, s.at, time.Since(start), "the virtual time of the answer")
				want := s.status
				if want == 0 {
					want = 200
				}
				assert.Equal(t, want, resp.StatusCode)
				assert.LessOrEqual(t, strings.Count(got, "data: [DONE]"), 1, "two answers in one body")
				assert.LessOrEqual(t, strings.Count(got, `"object":"chat.completion"`), 1, "two answers in one body")
				switch {
				case s.fails != "" && s.stream:
					require.Error(t, rerr, "a failed stream is never passed off as complete")
					assert.Contains(t, rerr.Error(), s.fails)
					assert.Contains(t, got, s.fails, "the in-band error frame")
					assert.NotContains(t, got, "data: [DONE]")
					if s.told != "" {
						text, _ := sseText(got)
						assert.Equal(t, s.told, text)
					}
				case s.fails != "":
					require.NoError(t, rerr)
					assert.Contains(t, got, s.fails, "the provider's own error")
				default:
					require.NoError(t, rerr)
					if s.stream {
						text, done := sseText(got)
						assert.Equal(t, s.text, text)
						assert.True(t, done, "the answer's end marker")
						assert.Contains(t, got, `"model":"`+s.model+`"`, "the model that answered")
					} else {
						var c struct {
							Model   string
							Choices []struct{ Message struct{ Content string } }
						}
						require.NoError(t, json.Unmarshal(b, &c), got)
						require.Len(t, c.Choices, 1)
						assert.Equal(t, s.text, c.Choices[0].Message.Content)
						assert.Equal(t, s.model, c.Model, "the model that answered")
					}
				}
				assertAttempts(t, s, primary, fb)
			})
		})
	}
}

func TestR20_15_ShapesThroughTheNativeClient(t *testing.T) {
	for _, s := range shapeTable() {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				primary, fb := shapeServers(t, s)
				sl, q := shapeLayers(t, s)
				tr := primary.Transport()
				t.Cleanup(tr.CloseIdleConnections)
				newClient := func(url string) *client.Client {
					ch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr),
						chain.WithPerCall(q...), chain.WithPerAttempt(sl))
					require.NoError(t, err)
					c, err := client.New(url, ch, client.WithAPIKey(rigtest.Key))
					require.NoError(t, err)
					return c
				}
				pch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr),
					chain.WithPerCall(q...), chain.WithPerAttempt(sl))
				require.NoError(t, err)
				c, err := client.New(primary.URL, pch, client.WithAPIKey(rigtest.Key),
					client.WithFallback(s.rules, client.FallbackTarget{Client: newClient(fb.URL), Model: "gpt-4o"}))
				require.NoError(t, err)
				req := canaryRequest()
				start := time.Now()
				var text string
				var comp *chat.Completion
				if s.stream {
					req.Stream = true
					text, comp, err = rigtest.Collect(t, c.Stream(context.Background(), req))
				} else {
					comp, err = c.Complete(context.Background(), req)
					if comp != nil {
						text = comp.Message.Content
					}
				}
				if s.fails == "" {
					assert.Equal(t, s.at, time.Since(start), "the virtual time of the answer")
					require.NoError(t, err)
					assert.Equal(t, s.text, text)
					require.NotNil(t, comp, "a whole answer")
					assert.Equal(t, s.model, comp.Model, "the model that answered")
					if s.model == "gpt-4o-2024-08-06" {
						require.NotNil(t, comp.Usage)
						assert.Equal(t, chat.Usage{InputTokens: 31, OutputTokens: 41}, *comp.Usage, "the fallback's usage")
					}
				} else {
					require.Error(t, err)
					assert.Nil(t, comp, "a failed answer is never passed off as complete")
					assert.Equal(t, s.told, text, "what was delivered before the failure")
					var re *layer.RecoveryError
					require.ErrorAs(t, err, &re)
					if s.status != 0 {
						assert.Equal(t, s.fails, re.Failure.ProviderCode, "the provider's own error")
						assert.Empty(t, re.Targets, "unrouted")
					} else {
						assert.Contains(t, err.Error(), s.fails)
					}
				}
				assertAttempts(t, s, primary, fb)
			})
		})
	}
}

// sseText returns the content of an OpenAI stream's deltas and whether it
// ended with its end marker.
func sseText(body string) (string, bool) {
	var b strings.Builder
	done := false
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if json.Unmarshal([]byte(data), &ev) == nil {
			for _, c := range ev.Choices {
				b.WriteString(c.Delta.Content)
			}
		}
	}
	return b.String(), done
}

// A 60 s outage of the primary (503 with Retry-After: 2), 20 calls 4 s
// apart, through each library entry point with a shared retry quota:
// every call is answered, by the fallback while the primary is down, and
// by the primary again from the moment it recovers — the quota's shared
// cooldown keeps no call away from it beyond what its Retry-After said —
// with one request to the fallback per call it answered.
func TestR20_15_ShapeOutageFallsBackAndRecoversAtOnce(t *testing.T) {
	type caller func(t *testing.T, primary, fb string, tr http.RoundTripper, q layer.Layer) func() (string, error)
	for name, call := range map[string]caller{
		"DropIn": func(t *testing.T, primary, fb string, tr http.RoundTripper, q layer.Layer) func() (string, error) {
			fl, err := fallback.New(fallback.Config{Codec: openai.New(), Targets: []fallback.Target{{Upstream: fb, Model: "gpt-4o"}}})
			require.NoError(t, err)
			ch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr), chain.WithPerCall(fl, q))
			require.NoError(t, err)
			hc := &http.Client{Transport: ch}
			body := string(encoded(t, canaryRequest()))
			return func() (string, error) {
				resp, err := hc.Post(primary+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				var c struct {
					Choices []struct{ Message struct{ Content string } }
				}
				if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) != 1 {
					return "", fmt.Errorf("status %d: %v", resp.StatusCode, err)
				}
				return c.Choices[0].Message.Content, nil
			}
		},
		"Native": func(t *testing.T, primary, fb string, tr http.RoundTripper, q layer.Layer) func() (string, error) {
			newClient := func(url string, opts ...client.Option) *client.Client {
				ch, err := chain.Default(openai.New(), chain.WithPolicy(shapePolicy()), chain.WithTransport(tr), chain.WithPerCall(q))
				require.NoError(t, err)
				c, err := client.New(url, ch, opts...)
				require.NoError(t, err)
				return c
			}
			c := newClient(primary, client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: newClient(fb), Model: "gpt-4o"}))
			return func() (string, error) {
				comp, err := c.Complete(context.Background(), canaryRequest())
				if err != nil {
					return "", err
				}
				return comp.Message.Content, nil
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				const outage = 60 * time.Second
				var mu sync.Mutex
				var primaryAt []time.Duration
				fbN := 0
				primary, tr := recoursetest.ServeMemory(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					at := time.Since(start)
					mu.Lock()
					primaryAt = append(primaryAt, at)
					mu.Unlock()
					w.Header().Set("Content-Type", "application/json")
					if at < outage {
						w.Header().Set("Retry-After", "2")
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
					_, _ = io.WriteString(w, shapeFallbackChat)
				}))
				t.Cleanup(func() {
					tr.CloseIdleConnections()
					for _, s := range []*httptest.Server{primary, fb} {
						s.CloseClientConnections()
						s.Close()
					}
				})
				q, err := quota.New(quota.WithStore(quota.NewMemoryStore()))
				require.NoError(t, err)
				do := call(t, primary.URL, fb.URL, tr, q)

				const calls = 20
				got := make([]string, calls)
				errs := make([]error, calls)
				at := make([]time.Duration, calls)
				var wg sync.WaitGroup
				for i := range calls {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * 4 * time.Second)
						got[i], errs[i] = do()
						at[i] = time.Since(start)
					})
				}
				wg.Wait()
				byFallback, byPrimary := 0, 0
				for i := range calls {
					sent := time.Duration(i) * 4 * time.Second
					require.NoError(t, errs[i], "call %d at %v answered", i, sent)
					switch got[i] {
					case "from the fallback":
						byFallback++
					case "from the primary":
						byPrimary++
					default:
						t.Errorf("call %d: %q", i, got[i])
					}
					switch {
					case sent+4*time.Second < outage:
						assert.Equal(t, "from the fallback", got[i], "call %d at %v, during the outage", i, sent)
					case sent >= outage:
						assert.Equal(t, "from the primary", got[i], "call %d at %v, after the outage", i, sent)
						assert.Equal(t, sent, at[i], "call %d answered at once", i)
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
			})
		})
	}
}
