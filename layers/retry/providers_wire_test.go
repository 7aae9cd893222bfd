package retry_test

// Per-provider wire behaviour: R2.3 (encoded once, byte-identical resends
// that no hook can change), R14.1 (each provider's request encoding reaches
// the wire), and the oMLX specifics: whitespace before the JSON of an
// ordinary answer (R4.4, R4.6) and the legacy timeout that only
// recovery-disabled calls apply (R7.2).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// pvSchema is the schema of the structured rows.
const pvSchema = `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`

// pvMutateAll changes, in place, everything the caller still holds of req
// and schema: message text, images, tool calls, tool descriptors, options,
// the model and the schema bytes.
func pvMutateAll(req *chat.Request, schema *chat.Schema) {
	for i := range req.Messages {
		m := &req.Messages[i]
		m.Content = "MUTATED"
		for j := range m.Images {
			for k := range m.Images[j].Data {
				m.Images[j].Data[k] = 'X'
			}
		}
		for j := range m.ToolCalls {
			m.ToolCalls[j].Name = "mutated"
			for k := range m.ToolCalls[j].Arguments {
				m.ToolCalls[j].Arguments[k] = ' '
			}
		}
	}
	req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: "appended"})
	for i := range req.Tools {
		req.Tools[i].Name = "mutated"
		req.Tools[i].Description = "mutated"
		for k := range req.Tools[i].Parameters {
			req.Tools[i].Parameters[k] = ' '
		}
	}
	req.Tools = append(req.Tools, chat.ToolSpec{Name: "extra"})
	o := &req.Options
	if o.Temperature != nil {
		*o.Temperature = 1.9
	}
	if o.TopP != nil {
		*o.TopP = 0.01
	}
	for _, p := range []*int{o.TopK, o.MaxTokens, o.Seed, o.ContextLength} {
		if p != nil {
			*p = 999
		}
	}
	for i := range o.Stop {
		o.Stop[i] = "MUTATED"
	}
	req.Model = "other-model"
	if schema != nil {
		schema.Name = "mutated"
		for k := range schema.Schema {
			schema.Schema[k] = ' '
		}
	}
}

// R2.3 and R12.4 per provider: the payload and the credential headers are
// encoded once; every attempt sends the byte-identical body and headers,
// whatever the admission hook does to the caller's messages, schema and tool
// descriptors and whatever the capture hook does to its snapshots.
func TestProviders_R2_3_EveryAttemptSendsIdenticalBytes(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		for _, structured := range []bool{false, true} {
			t.Run("structured="+strconv.FormatBool(structured), func(t *testing.T) {
				req := p.rich()
				schema := chat.Schema{Name: "answer", Schema: json.RawMessage(pvSchema)}
				want := func() []byte {
					c := pvClone(req)
					if structured {
						s := schema
						s.Schema = append(json.RawMessage(nil), schema.Schema...)
						c.Schema = &s
					}
					b, err := p.codec().Encode(c)
					require.NoError(t, err)
					return b
				}()

				var mu sync.Mutex
				hooked := 0
				hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
					mu.Lock()
					defer mu.Unlock()
					hooked++
					// Inside the admission hook: mutate everything the caller holds.
					pvMutateAll(req, &schema)
					return layer.Allow, nil
				}
				pol := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: hook}
				pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
					for i := range s.Bytes {
						s.Bytes[i] = '!'
					}
					s.Header.Set("Authorization", "Bearer other")
					s.Header.Del("Content-Type")
					return nil
				}
				final := p.okStep("done")
				if structured {
					final = p.okStep(`{"a":"done"}`)
				}
				r := p.rig(t, pol, p.statusStep(503), p.statusStep(503), final)

				var err error
				if structured {
					_, err = r.Client.CompleteStructured(context.Background(), req, schema)
				} else {
					_, err = r.Client.Complete(context.Background(), req)
				}
				require.NoError(t, err)
				assert.Equal(t, 2, hooked)

				reqs := r.Server.Requests()
				require.Len(t, reqs, 3)
				for i, q := range reqs {
					assert.Equal(t, string(want), string(q.Body), "R2.3: attempt %d sends the bytes encoded once", i+1)
					assert.Equal(t, reqs[0].Header, q.Header, "R2.3: attempt %d sends the same headers", i+1)
					assert.Equal(t, p.path, q.Path)
				}
				assert.Equal(t, "Bearer "+rigtest.Key, reqs[2].Header.Get("Authorization"))
				assert.Equal(t, "application/json", reqs[2].Header.Get("Content-Type"))
				assert.NotContains(t, string(reqs[2].Body), "MUTATED")
				assert.NotContains(t, string(reqs[2].Body), "appended")

				// What reached the wire is the provider's own encoding (R14.1).
				var body map[string]any
				require.NoError(t, json.Unmarshal(reqs[2].Body, &body))
				pvCheckEncoding(t, p, body, structured)
				evs := r.Rec.Events()
				wantOp := codec.Ordinary
				if structured {
					wantOp = codec.Structured
				}
				for _, e := range evs {
					assert.Equal(t, wantOp, e.Operation)
				}
			})
		}
	})
}

// pvCheckEncoding asserts the provider-specific fields of a recorded rich
// request body.
func pvCheckEncoding(t *testing.T, p pvProv, body map[string]any, structured bool) {
	t.Helper()
	var schema any
	require.NoError(t, json.Unmarshal([]byte(pvSchema), &schema))
	if p.provider == codec.OpenAI {
		assert.NotEqual(t, true, body["stream"], "an ordinary call does not stream")
	} else {
		assert.Equal(t, false, body["stream"], "an ordinary call says stream:false (Ollama streams when it is absent)")
	}
	msgs, _ := body["messages"].([]any)
	require.Len(t, msgs, 4, "the history is sent")
	user, _ := msgs[1].(map[string]any)
	img := base64.StdEncoding.EncodeToString(pvImage)
	switch p.provider {
	case codec.Ollama:
		assert.Equal(t, map[string]any{
			"temperature": 0.25, "top_p": 0.5, "top_k": float64(40), "num_ctx": float64(8192),
			"num_predict": float64(64), "stop": []any{"END", "STOP"}, "seed": float64(7),
		}, body["options"], "Ollama sampling, context, predict and stop options")
		assert.Equal(t, []any{img}, user["images"], "Ollama images: base64 without a data: prefix")
		assert.Equal(t, rigtest.Prompt, user["content"])
		if structured {
			assert.Equal(t, schema, body["format"], "Ollama sends the schema as format")
		} else {
			assert.NotContains(t, body, "format")
		}
		assert.NotContains(t, body, "response_format")
	default:
		assert.Equal(t, 0.25, body["temperature"])
		assert.Equal(t, 0.5, body["top_p"])
		assert.Equal(t, float64(64), body["max_tokens"])
		assert.Equal(t, []any{"END", "STOP"}, body["stop"])
		if p.provider == codec.OMLX {
			assert.Equal(t, float64(40), body["top_k"])
			assert.Equal(t, "low", body["reasoning_effort"])
		} else {
			assert.Equal(t, float64(7), body["seed"])
		}
		parts, _ := user["content"].([]any)
		require.Len(t, parts, 2, "text part then image part")
		assert.Equal(t, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + img}}, parts[1])
		if structured {
			rf, _ := body["response_format"].(map[string]any)
			require.NotNil(t, rf, "a structured call sends response_format")
			assert.Equal(t, "json_schema", rf["type"])
			js, _ := rf["json_schema"].(map[string]any)
			require.NotNil(t, js)
			assert.Equal(t, "answer", js["name"])
			assert.Equal(t, schema, js["schema"])
		} else {
			assert.NotContains(t, body, "response_format")
		}
		assert.NotContains(t, body, "format")
	}
	tools, _ := body["tools"].([]any)
	require.Len(t, tools, 1, "the tool descriptor is sent")
	assert.Equal(t, "lookup", tools[0].(map[string]any)["function"].(map[string]any)["name"])
}

// R2.3 for the structured call alone: the two recorded bodies of a 503 and
// its admitted resend are equal, and the hook's mutation of the schema it
// still holds changes nothing.
func TestProviders_R2_3_StructuredResendIgnoresSchemaMutation(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		schema := chat.Schema{Name: "answer", Schema: json.RawMessage(pvSchema)}
		req := p.request()
		hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			pvMutateAll(req, &schema)
			return layer.Allow, nil
		}
		r := p.rig(t, retry.Policy{MaxAttempts: 2, Jitter: zeroJitter, Admit: hook}, p.statusStep(503), p.okStep(`{"a":"x"}`))

		comp, err := r.Client.CompleteStructured(context.Background(), req, schema)

		require.NoError(t, err)
		assert.JSONEq(t, `{"a":"x"}`, comp.Message.Content)
		reqs := r.Server.Requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, string(reqs[0].Body), string(reqs[1].Body))
		var body map[string]any
		require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
		key := "response_format"
		if p.provider == codec.Ollama {
			key = "format"
		}
		assert.Contains(t, body, key)
		assert.Contains(t, string(reqs[1].Body), `"required":["a"]`)
		assert.Contains(t, string(reqs[1].Body), rigtest.Prompt)
	})
}

// --- oMLX: whitespace before the JSON -------------------------------------

// pvOMLXRow returns the oMLX provider row.
func pvOMLXRow(t *testing.T) pvProv { return pvRow(t, codec.OMLX) }

// oMLX answers 200 at once and sends a space every few seconds until the
// JSON is ready: the whitespace is not semantic output and the answer
// succeeds.
func TestProviders_OMLX_EarlyWhitespaceThenJSONSucceeds(t *testing.T) {
	p := pvOMLXRow(t)
	ws := " \n \n   \t "
	step := recoursetest.Step{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}},
		Chunks: [][]byte{[]byte(" "), []byte(ws), []byte(p.okBody("hello") + "\n")}}
	pol := pvPolicy()
	rec := wired(&pol)
	r := p.rig(t, pol, step)

	comp, err := r.Client.Complete(context.Background(), p.request())

	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content)
	assert.Equal(t, pvOMLXModel, comp.Model)
	assert.Equal(t, []string{"attempt_started", "attempt_succeeded"}, rec.Types())
	assert.Equal(t, 1, r.Server.Count())
	ok := eventsOf(rec.Events(), event.AttemptSucceeded)
	require.Len(t, ok, 1)
	assert.Equal(t, int64(len("hello")), ok[0].Progress.Observed.ContentBytes, "only the content counts")
	assert.Equal(t, int64(1+len(ws)+len(p.okBody("hello"))+1), ok[0].Progress.RawBytes)
}

// Whitespace then a cut is a partial 2xx body without semantic output: it
// fails closed (partial_response), never semantic_output, and is not resent
// even with an allowing hook.
func TestProviders_OMLX_WhitespaceThenCutIsPartialResponse(t *testing.T) {
	p := pvOMLXRow(t)
	ws := strings.Repeat(" ", 32)
	// chunked is how oMLX sends it: a space at a time, no Content-Length.
	chunked := recoursetest.Step{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}},
		Chunks: [][]byte{[]byte(ws[:8]), []byte(ws[8:]), []byte(p.okBody("hello"))}}
	for _, tc := range []struct {
		name string
		step recoursetest.Step
		cut  int
	}{
		{"cut after the whitespace", recoursetest.JSON(200, ws+p.okBody("hello")), len(ws)},
		{"cut inside the whitespace", recoursetest.JSON(200, ws+p.okBody("hello")), len(ws) / 2},
		{"cut after the whitespace and the first JSON bytes", recoursetest.JSON(200, ws+p.okBody("hello")), len(ws) + len(`{"id":"chat`)},
		{"chunked, cut after the whitespace", chunked, len(ws)},
		{"chunked, cut inside the whitespace", chunked, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := p.rig(t, pvPolicy(), tc.step.Cut(tc.cut), p.okStep("never"))

			_, err := r.Client.Complete(context.Background(), p.request())

			re := pvNotResent(t, p, r, err, event.ReasonPartialResponse)
			assert.NotEqual(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
			assert.Equal(t, event.CategoryTransport, re.Failure.Category)
			assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
			assert.False(t, re.Failure.Progress.Observed.Any(), "whitespace is not semantic output")
			assert.Equal(t, int64(tc.cut), re.Failure.Progress.RawBytes)
		})
	}
}

// oMLX answers 200 before it knows the outcome; a generation that fails
// then writes an error object after the whitespace. It is a provider error
// in a 2xx body: never eligible (R4.7), its known code kept (R10.3).
func TestProviders_OMLX_WhitespaceThenErrorObjectIsProviderResponse(t *testing.T) {
	p := pvOMLXRow(t)
	body := "   \n  " + p.codedError("server_error", "generation failed") + "\n"
	pol := pvPolicy()
	pol.RetryableCategories = []event.Category{event.CategoryTransport, event.CategoryHTTP, event.CategoryProviderResponse}
	r := p.rig(t, pol, recoursetest.JSON(200, body), p.okStep("never"))

	_, err := r.Client.Complete(context.Background(), p.request())

	re := pvNotResent(t, p, r, err, event.ReasonPermanent)
	assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
	assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
	assert.Equal(t, "server_error", re.Failure.ProviderCode)
	assert.False(t, re.Failure.Progress.Observed.Any())
}

// --- oMLX: the legacy timeout applies only without recovery (R7.2) --------

// The four cases run in parallel, so the test takes about answer (90 ms) of
// real time, well under 300 ms.
func TestProviders_OMLX_R7_2_LegacyTimeoutOnlyWithoutRecovery(t *testing.T) {
	const (
		legacy = 50 * time.Millisecond
		answer = 90 * time.Millisecond // the server answers after this, > legacy
	)
	p := pvOMLXRow(t)
	codec := omlx.New(omlx.WithLegacyTimeout(legacy))
	require.Equal(t, legacy, codec.LegacyTimeout())
	gated := func() (recoursetest.Step, func()) {
		gate := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(gate) }) }
		return p.okStep("slow but fine").Gated(-1, gate), release
	}
	// client returns a client of a chain built with opts against srv.
	cl := func(t *testing.T, srv *recoursetest.Server, opts ...chain.Option) *client.Client {
		ch, err := chain.Default(codec, append(opts, chain.WithTransport(newTransport(t)))...)
		require.NoError(t, err)
		cl, err := client.New(srv.URL, ch, client.WithAPIKey(rigtest.Key))
		require.NoError(t, err)
		return cl
	}
	pol := retry.Policy{MaxAttempts: 2, Admit: allowHook}

	// succeeds: the server answers only after the legacy timeout, and the
	// recovery-enabled call still succeeds.
	succeeds := func(t *testing.T, srv *recoursetest.Server, release func(), call func() (*chat.Completion, error)) {
		timer := time.AfterFunc(answer, release)
		defer timer.Stop()
		start := time.Now()

		comp, err := call()

		elapsed := time.Since(start)
		require.NoError(t, err, "R7.2: a recovery-enabled oMLX call never times out active generation")
		assert.Equal(t, "slow but fine", comp.Message.Content)
		assert.Greater(t, elapsed, legacy, "the answer came after the legacy timeout")
		assert.Equal(t, 1, srv.Count())
	}
	// timesOut: the gate is released only after the call returned, so the
	// server never answered while the call ran and only the legacy timeout
	// can have ended it.
	timesOut := func(t *testing.T, srv *recoursetest.Server, release func(), call func() (*chat.Completion, error)) {
		start := time.Now()

		_, err := call()

		elapsed := time.Since(start)
		release()
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the legacy timeout ended the call")
		assert.GreaterOrEqual(t, elapsed, legacy)
		var re *layer.RecoveryError
		assert.NotErrorAs(t, err, &re, "without recovery there is no RecoveryError")
		assert.Equal(t, 1, srv.Count())
	}

	t.Run("recovery enabled: no legacy timeout", func(t *testing.T) {
		t.Parallel()
		step, release := gated()
		defer release()
		r := rigtest.New(t, codec, pol, step)
		succeeds(t, r.Server, release, func() (*chat.Completion, error) {
			return r.Client.Complete(context.Background(), p.request())
		})
		assert.Equal(t, []string{"attempt_started", "attempt_succeeded"}, r.Rec.Types())
	})
	t.Run("WithoutRecovery chain, per-call policy: no legacy timeout", func(t *testing.T) {
		t.Parallel()
		step, release := gated()
		defer release()
		srv := startServer(t, step)
		cl := cl(t, srv, chain.WithoutRecovery())
		succeeds(t, srv, release, func() (*chat.Completion, error) {
			return cl.Complete(retry.WithPolicy(context.Background(), &pol), p.request())
		})
	})
	t.Run("WithoutRecovery: the legacy timeout applies", func(t *testing.T) {
		t.Parallel()
		step, release := gated()
		defer release()
		srv := startServer(t, step)
		cl := cl(t, srv, chain.WithoutRecovery())
		timesOut(t, srv, release, func() (*chat.Completion, error) {
			return cl.Complete(context.Background(), p.request())
		})
	})
	t.Run("recovering chain, per-call nil policy: the legacy timeout applies", func(t *testing.T) {
		t.Parallel()
		step, release := gated()
		defer release()
		srv := startServer(t, step)
		cl := cl(t, srv, chain.WithPolicy(pol))
		timesOut(t, srv, release, func() (*chat.Completion, error) {
			return cl.Complete(retry.WithPolicy(context.Background(), nil), p.request())
		})
	})
}
