package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The privacy canary (R10.5): every scenario runs with
// rigtest.Key as the API key and rigtest.Prompt in the request, against a
// provider that echoes both back, and every safe output is scanned.

// echo is a provider error message that repeats the key and the prompt.
var echo = "Invalid key " + rigtest.Key + " for " + rigtest.Prompt

// banned are the strings no safe output may hold.
var banned = []string{rigtest.Key, rigtest.Prompt, "CANARY", "bearer", "authorization"}

type canaryScenario struct {
	name   string
	policy func(p *retry.Policy)
	steps  func(target string) []recoursetest.Step
	// call runs the completion; nil means Complete with the canary request.
	call func(t *testing.T, r *rigtest.Rig, ctx context.Context) error
	// cancel, when set, cancels the call's context once it returns true.
	cancelWhen func(r *rigtest.Rig) bool
}

func echoStep(status int, kv ...string) recoursetest.Step {
	return recoursetest.JSON(status, recoursetest.OpenAIError("invalid_request_error", "invalid_api_key", echo), kv...)
}

func canaryScenarios() []canaryScenario {
	steps := func(s ...recoursetest.Step) func(string) []recoursetest.Step {
		return func(string) []recoursetest.Step { return s }
	}
	return []canaryScenario{
		{name: "401 echoing key and prompt", steps: steps(echoStep(401, "X-Request-Id", rigtest.Key))},
		{name: "429 with Retry-After then success", steps: steps(
			echoStep(429, "Retry-After", "1", "X-Request-Id", "req_"+rigtest.Prompt),
			okStep("You said "+rigtest.Prompt))},
		{name: "503 exhausted with date Retry-After", steps: steps(
			echoStep(503, "Retry-After", "Sat, 10 Oct 2026 00:00:01 GMT"),
			echoStep(503, "Retry-After", rigtest.Key),
			echoStep(503))},
		{name: "200 provider error with the prompt as code", steps: steps(
			recoursetest.JSON(200, recoursetest.OpenAIError("invalid_request_error", rigtest.Prompt, echo)))},
		{name: "200 cut after echoed content", steps: steps(
			recoursetest.JSON(200, recoursetest.OpenAIChat("You said "+rigtest.Prompt+" with "+rigtest.Key)).Cut(120))},
		{name: "200 malformed echo", steps: steps(recoursetest.JSON(200, `{"choices":[`+rigtest.Prompt+rigtest.Key))},
		{name: "redirect with the key in the Location", steps: func(target string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.Redirect(302, target+"/v1?key="+rigtest.Key+"&q="+rigtest.Prompt)}
		}},
		{name: "redirect through an http.Client", steps: func(target string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.Redirect(307, target+"/v1?key="+rigtest.Key)}
		}, call: func(t *testing.T, r *rigtest.Rig, ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+rigtest.Key)
			resp, err := r.HTTP.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			return err
		}},
		{name: "reset before headers", steps: steps(recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset())},
		{name: "admission hook error", policy: func(p *retry.Policy) {
			p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return "", errors.New("deny " + rigtest.Key + " " + rigtest.Prompt)
			}
		}, steps: steps(echoStep(503))},
		{name: "admission hook panic", policy: func(p *retry.Policy) {
			p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				panic("boom " + rigtest.Key + " " + rigtest.Prompt)
			}
		}, steps: steps(echoStep(503))},
		{name: "admission unknown decision", policy: func(p *retry.Policy) {
			p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Decision(rigtest.Prompt), nil
			}
		}, steps: steps(echoStep(503))},
		{name: "admission reject", policy: func(p *retry.Policy) {
			p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
		}, steps: steps(echoStep(502))},
		{name: "response capture failure", policy: func(p *retry.Policy) {
			onWire := p.OnWire
			p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
				_ = onWire(ctx, s)
				if s.Direction == layer.DirectionResponse {
					return fmt.Errorf("capture %s %s", rigtest.Key, rigtest.Prompt)
				}
				return nil
			}
		}, steps: steps(echoStep(503))},
		{name: "request capture failure", policy: func(p *retry.Policy) {
			onWire := p.OnWire
			p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
				_ = onWire(ctx, s)
				return errors.New("capture " + rigtest.Key + " " + rigtest.Prompt)
			}
		}, steps: steps(okStep("never"))},
		{name: "sleep failure", policy: func(p *retry.Policy) {
			p.Sleep = func(context.Context, time.Duration) error { return errors.New("sleep " + rigtest.Key) }
		}, steps: steps(echoStep(503))},
		{name: "deadline", policy: func(p *retry.Policy) { p.Deadline = rigtest.Epoch.Add(-time.Second) }, steps: steps(echoStep(503))},
		{name: "delay ceiling", steps: steps(echoStep(429, "Retry-After", "86400"))},
		{name: "provider hints: quota 429 echoing key and prompt", policy: func(p *retry.Policy) { p.ProviderHints = true },
			steps: steps(recoursetest.JSON(429, recoursetest.OpenAIError("insufficient_quota", "insufficient_quota", echo), "retry-after-ms", rigtest.Key))},
		{name: "provider hints: x-should-retry false", policy: func(p *retry.Policy) { p.ProviderHints = true },
			steps: steps(echoStep(503, "x-should-retry", "false", "x-ms-retry-after-ms", rigtest.Prompt))},
		{name: "provider hints: retry-after-ms above the ceiling", policy: func(p *retry.Policy) { p.ProviderHints = true },
			steps: steps(echoStep(429, "retry-after-ms", "86400000", "X-Request-Id", rigtest.Key))},
		{name: "cancelled before start", steps: steps(okStep("never")), cancelWhen: func(*rigtest.Rig) bool { return true }},
		{name: "cancelled during the attempt", steps: steps(recoursetest.Step{Status: 200}.Held()),
			cancelWhen: func(r *rigtest.Rig) bool { return r.Server.Count() == 1 }},
		{name: "structured call with a schema and tool history", steps: steps(echoStep(400)),
			call: func(t *testing.T, r *rigtest.Rig, ctx context.Context) error {
				req := canaryRequest()
				req.Messages = append(req.Messages,
					chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "lookup",
						Arguments: json.RawMessage(`{"q":"` + rigtest.Prompt + `"}`)}}},
					chat.Message{Role: chat.Tool, ToolCallID: "call_1", Content: "tool said " + rigtest.Prompt})
				req.Tools = []chat.ToolSpec{{Name: "lookup", Description: rigtest.Prompt}}
				_, err := r.Client.CompleteStructured(ctx, req, chat.Schema{Schema: json.RawMessage(`{"description":"` + rigtest.Prompt + `"}`)})
				return err
			}},
		{name: "per-call policy error", call: func(t *testing.T, r *rigtest.Rig, ctx context.Context) error {
			p := retry.Policy{RetryableCategories: []event.Category{event.Category(rigtest.Prompt)}}
			_, err := r.Client.Complete(retry.WithPolicy(ctx, &p), canaryRequest())
			return err
		}, steps: steps()},
	}
}

// safeOutputs collects every safe rendering of err, the events and the
// failures they carry, including structured log lines.
func safeOutputs(err error, events []event.Event) []string {
	var out []string
	var buf bytes.Buffer
	jsonLog := slog.New(slog.NewJSONHandler(&buf, nil))
	textLog := slog.New(slog.NewTextHandler(&buf, nil))
	add := func(v any) {
		js, _ := json.Marshal(v)
		out = append(out, string(js), fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v))
		jsonLog.Info("recovery", "value", v)
		textLog.Info("recovery", "value", v)
	}
	var failures []event.Failure
	if err != nil {
		out = append(out, err.Error(), fmt.Sprintf("%v %+v %s %q", err, err, err, err))
		js, _ := json.Marshal(err)
		out = append(out, string(js))
		jsonLog.Error("call failed", "err", err)
		textLog.Error("call failed", "err", err)
		var re *layer.RecoveryError
		if errors.As(err, &re) {
			add(re)
			out = append(out, fmt.Sprintf("%+v", *re))
			failures = append(failures, re.Failure)
			failures = append(failures, re.History...)
		}
		var pe *layer.PolicyError
		if errors.As(err, &pe) {
			add(pe)
		}
	}
	for _, e := range events {
		add(e)
		if e.Failure != nil {
			failures = append(failures, *e.Failure)
		}
	}
	for _, f := range failures {
		add(f)
		add(&f)
	}
	return append(out, buf.String())
}

func TestR10_5_PrivacyCanary(t *testing.T) {
	target := recoursetest.NewTarget()
	defer target.Close()
	var sensitive strings.Builder // what Inspect and OnWire saw, which MAY hold the canaries
	for _, sc := range canaryScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 0.5)}
			rec := wired(&p)
			if sc.policy != nil {
				sc.policy(&p)
			}
			r := rigtest.New(t, openai.New(), p, sc.steps(target.URL)...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			call := sc.call
			if call == nil {
				call = func(t *testing.T, r *rigtest.Rig, ctx context.Context) error {
					_, err := r.Client.Complete(ctx, canaryRequest())
					return err
				}
			}
			done := make(chan error, 1)
			if sc.cancelWhen != nil && sc.cancelWhen(r) {
				cancel()
			}
			go func() { done <- call(t, r, ctx) }()
			if sc.cancelWhen != nil {
				require.Eventually(t, func() bool { return sc.cancelWhen(r) }, wait, time.Millisecond)
				cancel()
			}
			err := awaitResult(t, done)

			for _, s := range safeOutputs(err, rec.Events()) {
				for _, b := range banned {
					assert.NotContains(t, strings.ToLower(s), strings.ToLower(b), "R10.5: a safe output holds %q", b)
				}
			}

			// The sensitive paths do hold the canaries: the test is live.
			for _, s := range rec.Wire() {
				sensitive.Write(s.Bytes)
				for k, vs := range s.Header {
					sensitive.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
				}
			}
			var re *layer.RecoveryError
			if errors.As(err, &re) {
				for _, f := range append([]event.Failure{re.Failure}, re.History...) {
					if ev := event.Inspect(&f); ev != nil {
						sensitive.Write(ev.Bytes)
						for k, vs := range ev.Headers {
							sensitive.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
						}
						fmt.Fprintf(&sensitive, "%v %v %v %v %+v\n", ev.Cause, ev.CaptureCause, ev.AdmissionCause, ev.DelayCause, ev.Response)
					}
				}
			}
		})
	}
	s := sensitive.String()
	assert.Contains(t, s, "Bearer "+rigtest.Key, "OnWire sees the credential header")
	assert.Contains(t, s, rigtest.Prompt, "OnWire and Inspect see the prompt")
	assert.Contains(t, s, echo, "Inspect sees the echoed body")
	assert.Contains(t, s, "key="+rigtest.Key, "Inspect sees the redirect Location")
	assert.Contains(t, s, "deny "+rigtest.Key, "Inspect sees the admission cause")
	assert.Contains(t, s, "boom "+rigtest.Key, "Inspect sees the admission panic")
	assert.Contains(t, s, "sleep "+rigtest.Key, "Inspect sees the delay cause")
	assert.Contains(t, s, "capture "+rigtest.Key, "Inspect sees the capture cause")
	assert.Equal(t, 0, target.Hits(), "R2.2: the Location is never contacted")
}

// The event observers added to a *layer.Call (used by tracing) get
// the same safe events.
func TestR10_5_ContextObserversSeeOnlySafeEvents(t *testing.T) {
	var mu sync.Mutex
	var events []event.Event
	ctx := withObserver(context.Background(), func(e event.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, echoStep(503), echoStep(401))
	_, err := r.Client.Complete(ctx, canaryRequest())
	require.Error(t, err)
	require.Len(t, events, len(r.Rec.Events()))
	for _, s := range safeOutputs(err, events) {
		for _, b := range banned {
			assert.NotContains(t, strings.ToLower(s), strings.ToLower(b))
		}
	}
}
