package retry_test

// Per-provider R10.3 (provider codes and request IDs) and R10.5 (the privacy
// canary).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R10.3: known codes are kept (OpenAI and oMLX; Ollama has no codes, so its
// ProviderCode is always empty), arbitrary codes are reachable only through
// event.Inspect, and a code that echoes the request or the credential is
// omitted.
func TestProviders_R10_3_ProviderCodes(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		rows := []struct {
			name    string
			status  int
			body    string
			prompt  string
			apiKey  string
			code    string // the code the body carries
			kept    bool   // kept in the safe record (never for Ollama)
			outcome event.Outcome
		}{
			{"known code kept", 429, p.codedError("rate_limit_exceeded", "slow down"), rigtest.Prompt, rigtest.Key, "rate_limit_exceeded", true, event.OutcomeExhausted},
			{"known code in a 2xx provider error", 200, p.codedError("invalid_request_error", "bad"), rigtest.Prompt, rigtest.Key, "invalid_request_error", true, event.OutcomeInterrupted},
			{"unknown code only by inspection", 429, p.codedError("weird_code", "slow down"), rigtest.Prompt, rigtest.Key, "weird_code", false, event.OutcomeExhausted},
			{"code echoing the prompt", 503, p.codedError("server_error", "busy"), rigtest.Prompt + " server_error", rigtest.Key, "server_error", false, event.OutcomeExhausted},
			{"code echoing the credential", 503, p.codedError("overloaded_error", "busy"), rigtest.Prompt, "sk-overloaded_error-1", "overloaded_error", false, event.OutcomeExhausted},
			{"prompt as code", 400, p.codedError(rigtest.Prompt, "bad"), rigtest.Prompt, rigtest.Key, rigtest.Prompt, false, event.OutcomeInterrupted},
			// A proxy in front of Ollama may send an OpenAI-style error
			// object: Ollama still has no codes.
			{"error object with a known code", 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, rigtest.Prompt, rigtest.Key, "rate_limit_exceeded", true, event.OutcomeExhausted},
			{"error object with a known code in a 2xx", 200, `{"error":{"message":"bad","type":"invalid_request_error","code":"invalid_request_error"}}`, rigtest.Prompt, rigtest.Key, "invalid_request_error", true, event.OutcomeInterrupted},
		}
		for _, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				r := p.rig(t, retry.Policy{MaxAttempts: 1}, recoursetest.JSON(tc.status, tc.body))
				cl, err := client.New(r.Server.URL, r.Chain, client.WithAPIKey(tc.apiKey))
				require.NoError(t, err)
				req := p.request()
				req.Messages[0].Content = tc.prompt

				_, err = cl.Complete(context.Background(), req)

				re := asRecoveryError(t, err)
				assert.Equal(t, tc.outcome, re.Outcome)
				assert.Equal(t, 1, r.Server.Count())
				ev := event.Inspect(&re.Failure)
				require.NotNil(t, ev)
				if p.provider == codec.Ollama {
					assert.Empty(t, re.Failure.ProviderCode, "R10.3: Ollama has no provider codes")
					assert.Empty(t, ev.Response.Code, "Ollama's ErrorCode is always empty")
					return
				}
				if tc.kept {
					assert.Equal(t, tc.code, re.Failure.ProviderCode, "R10.3: a known code is kept")
				} else {
					assert.Empty(t, re.Failure.ProviderCode, "R10.3")
				}
				assert.Equal(t, tc.code, ev.Response.Code, "R10.3: reachable by inspection")
				for _, f := range eventsOf(r.Rec.Events(), event.AttemptFailed) {
					assert.Equal(t, re.Failure.ProviderCode, f.Failure.ProviderCode, "events carry the same safe code")
				}
			})
		}
	})
}

// R10.3: a provider request ID is kept only when it is a valid UUID
// (optionally req_-prefixed) that echoes nothing of the request. Ollama
// sends no request ID header, so it never has one.
func TestProviders_R10_3_ProviderRequestIDs(t *testing.T) {
	u := uuid.NewString()
	pvEach(t, func(t *testing.T, p pvProv) {
		rows := []struct {
			name   string
			id     string
			prompt string
			header string
			kept   bool
		}{
			{"req_ UUID kept", "req_" + u, rigtest.Prompt, "", true},
			{"bare UUID kept", u, rigtest.Prompt, "", true},
			{"not a UUID", "req_abc123", rigtest.Prompt, "", false},
			{"UUID echoing a request header", u, rigtest.Prompt, u, false},
			{"req_ UUID whose UUID echoes a request header", "req_" + u, rigtest.Prompt, u, false},
			{"UUID echoing the prompt", u, rigtest.Prompt + " " + u, "", false},
		}
		for _, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				r := p.rig(t, retry.Policy{MaxAttempts: 1}, p.statusStep(503, "X-Request-Id", tc.id))
				opts := []client.Option{client.WithAPIKey(rigtest.Key)}
				if tc.header != "" {
					opts = append(opts, client.WithHeader("X-Correlation-Id", tc.header))
				}
				cl, err := client.New(r.Server.URL, r.Chain, opts...)
				require.NoError(t, err)
				req := p.request()
				req.Messages[0].Content = tc.prompt

				_, err = cl.Complete(context.Background(), req)

				re := asRecoveryError(t, err)
				ev := event.Inspect(&re.Failure)
				require.NotNil(t, ev)
				if p.provider == codec.Ollama {
					assert.Empty(t, re.Failure.ProviderRequestID, "Ollama sends no request ID")
					assert.Empty(t, ev.Response.RequestID)
					return
				}
				if tc.kept {
					assert.Equal(t, tc.id, re.Failure.ProviderRequestID)
				} else {
					assert.Empty(t, re.Failure.ProviderRequestID, "R10.3")
				}
				assert.Equal(t, tc.id, ev.Response.RequestID, "R10.3: reachable by inspection")
			})
		}
	})
}

// pvEcho is a provider error message that repeats the key and the prompt.
var pvEcho = "Invalid key " + rigtest.Key + " for " + rigtest.Prompt

type pvCanary struct {
	name   string
	policy func(p *retry.Policy)
	steps  func(p pvProv, target string) []recoursetest.Step
	// call runs the completion; nil means Complete with the canary request.
	call func(t *testing.T, p pvProv, r *rigtest.Rig, ctx context.Context) error
	// cancelled runs the call with a context cancelled before it starts.
	cancelled bool
}

func pvCanaries() []pvCanary {
	echo := func(status int, kv ...string) func(pvProv, string) []recoursetest.Step {
		return func(p pvProv, _ string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.JSON(status, p.codedError("invalid_api_key", pvEcho), kv...)}
		}
	}
	return []pvCanary{
		{name: "401 echoing key and prompt", steps: echo(401, "X-Request-Id", rigtest.Key)},
		{name: "503 echo without a hook", policy: func(p *retry.Policy) { p.Admit = nil }, steps: func(p pvProv, _ string) []recoursetest.Step {
			s := recoursetest.JSON(503, p.codedError("server_error", pvEcho), "Retry-After", rigtest.Key)
			return []recoursetest.Step{s, s, s}
		}},
		{name: "503 exhausted with date Retry-After", steps: func(p pvProv, _ string) []recoursetest.Step {
			return []recoursetest.Step{
				recoursetest.JSON(503, p.codedError("server_error", pvEcho), "Retry-After", "Sat, 10 Oct 2026 00:00:01 GMT"),
				recoursetest.JSON(503, p.codedError("server_error", pvEcho), "Retry-After", rigtest.Key),
				recoursetest.JSON(503, p.codedError("server_error", pvEcho), "X-Request-Id", "req_"+rigtest.Prompt),
			}
		}},
		{name: "429 then an echoing success", steps: func(p pvProv, _ string) []recoursetest.Step {
			return []recoursetest.Step{
				recoursetest.JSON(429, p.codedError("rate_limit_exceeded", pvEcho), "Retry-After", "1"),
				p.okStep("You said " + rigtest.Prompt),
			}
		}},
		{name: "200 provider error with the prompt as code", steps: func(p pvProv, _ string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.JSON(200, p.codedError(rigtest.Prompt, pvEcho))}
		}},
		{name: "200 cut after echoed content", steps: func(p pvProv, _ string) []recoursetest.Step {
			body := p.okBody("You said " + rigtest.Prompt + " with " + rigtest.Key)
			return []recoursetest.Step{recoursetest.JSON(200, body).Cut(strings.Index(body, rigtest.Key) + 4)}
		}},
		{name: "200 malformed echo", steps: func(pvProv, string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.JSON(200, `{"choices":[`+rigtest.Prompt+rigtest.Key)}
		}},
		{name: "redirect with the key in the Location", steps: func(_ pvProv, target string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.Redirect(307, target+"/v1?key="+rigtest.Key+"&q="+rigtest.Prompt)}
		}},
		{name: "reset before headers", steps: func(pvProv, string) []recoursetest.Step {
			return []recoursetest.Step{recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset()}
		}},
		{name: "admission hook error", policy: func(p *retry.Policy) {
			p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return "", errors.New("deny " + rigtest.Key + " " + rigtest.Prompt)
			}
		}, steps: echo(503)},
		{name: "response capture failure", policy: func(p *retry.Policy) {
			onWire := p.OnWire
			p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
				_ = onWire(ctx, s)
				if s.Direction == layer.DirectionResponse {
					return fmt.Errorf("capture %s %s", rigtest.Key, rigtest.Prompt)
				}
				return nil
			}
		}, steps: echo(503)},
		{name: "request capture failure", policy: func(p *retry.Policy) {
			onWire := p.OnWire
			p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
				_ = onWire(ctx, s)
				return errors.New("capture " + rigtest.Key + " " + rigtest.Prompt)
			}
		}, steps: func(p pvProv, _ string) []recoursetest.Step { return []recoursetest.Step{p.okStep("never")} }},
		{name: "sleep failure", policy: func(p *retry.Policy) {
			p.Sleep = func(context.Context, time.Duration) error { return errors.New("sleep " + rigtest.Key) }
		}, steps: echo(503)},
		{name: "cancelled before start", cancelled: true,
			steps: func(p pvProv, _ string) []recoursetest.Step { return []recoursetest.Step{p.okStep("never")} }},
		{name: "structured call with a schema and tool history", steps: echo(400),
			call: func(t *testing.T, p pvProv, r *rigtest.Rig, ctx context.Context) error {
				req := p.request()
				req.Messages = append(req.Messages,
					chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "lookup",
						Arguments: json.RawMessage(`{"q":"` + rigtest.Prompt + `"}`)}}},
					chat.Message{Role: chat.Tool, ToolCallID: "call_1", ToolName: "lookup", Content: "tool said " + rigtest.Prompt})
				req.Tools = []chat.ToolSpec{{Name: "lookup", Description: rigtest.Prompt}}
				_, err := r.Client.CompleteStructured(ctx, req, chat.Schema{Schema: json.RawMessage(`{"description":"` + rigtest.Prompt + `"}`)})
				return err
			}},
	}
}

// R10.5 per provider: neither rigtest.Key nor rigtest.Prompt ever appears in
// err.Error(), the JSON of the error, the events, or %+v of the failures
// (safeOutputs renders each of them, also through slog), while the
// sensitive paths (OnWire, Inspect) do hold them.
func TestProviders_R10_5_PrivacyCanary(t *testing.T) { pvEach(t, privacyCanary) }

// privacyCanary is TestProviders_R10_5_PrivacyCanary for the provider
// row p.
func privacyCanary(t *testing.T, p pvProv) {
	target := recoursetest.NewTarget()
	defer target.Close()
	var sensitive strings.Builder
	for _, sc := range pvCanaries() {
		t.Run(sc.name, func(t *testing.T) {
			pol := retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 0.5), Admit: allowHook}
			rec := wired(&pol)
			if sc.policy != nil {
				sc.policy(&pol)
			}
			r := p.rig(t, pol, sc.steps(p, target.URL)...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if sc.cancelled {
				cancel()
			}
			call := sc.call
			if call == nil {
				call = func(t *testing.T, p pvProv, r *rigtest.Rig, ctx context.Context) error {
					_, err := r.Client.Complete(ctx, p.request())
					return err
				}
			}

			err := call(t, p, r, ctx)

			outs := safeOutputs(err, rec.Events())
			require.NotEmpty(t, outs)
			for _, s := range outs {
				for _, b := range banned {
					assert.NotContains(t, strings.ToLower(s), strings.ToLower(b), "R10.5: a safe output holds %q", b)
				}
			}
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
	// The test is live: the sensitive paths saw the canaries.
	s := sensitive.String()
	assert.Contains(t, s, "Bearer "+rigtest.Key, "OnWire sees the credential header")
	assert.Contains(t, s, rigtest.Prompt, "OnWire and Inspect see the prompt")
	assert.Contains(t, s, pvEcho, "Inspect sees the echoed body")
	assert.Contains(t, s, "key="+rigtest.Key, "Inspect sees the redirect Location")
	assert.Contains(t, s, "deny "+rigtest.Key, "Inspect sees the admission cause")
	assert.Contains(t, s, "sleep "+rigtest.Key, "Inspect sees the delay cause")
	assert.Contains(t, s, "capture "+rigtest.Key, "Inspect sees the capture cause")
	assert.Equal(t, 0, target.Hits(), "R2.2: the Location is never contacted")
}
