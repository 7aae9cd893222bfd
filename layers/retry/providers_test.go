package retry_test

// Per-provider foundation conformance (R1–R12, R14, R15) for ordinary and
// structured calls: every behaviour runs once per provider row — OpenAI,
// oMLX and Ollama — against the scripted loopback provider, through the
// default chain and the native client.
//
// R8.3 shapes the table: without an admission hook an eligible OpenAI
// failure is resent, while an eligible Ollama or oMLX failure is an
// ambiguous local execution and stops with admission_required after exactly
// one POST. Rows that must resend therefore use an allowing hook for every
// provider, and each eligible scenario also runs without a hook.
//
// Every helper of the providers_*_test.go files starts with "pv" so that it
// never collides with the fixtures of the other chain_test files.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// pvProv is one provider row.
type pvProv struct {
	name     string
	provider codec.Provider
	codec    func() codec.Codec
	model    string
	// path is the endpoint the client posts to.
	path string
	// needsAdmission: R8.3, an eligible failure without a hook stops with
	// admission_required.
	needsAdmission bool
	// okBody is a complete 200 ordinary answer holding content.
	okBody func(content string) string
	// errorBody is the provider's error body for an HTTP status.
	errorBody func(status int) string
	// codedError is an error body with code and message; Ollama has no
	// codes, so its body carries the message only.
	codedError func(code, message string) string
	// request is an ordinary request whose only message is the prompt canary.
	request func() *chat.Request
	// rich is a request with every sampling control the provider supports,
	// an image, history and a tool (R14.1).
	rich func() *chat.Request
}

func (p pvProv) okStep(content string) recoursetest.Step {
	return recoursetest.JSON(200, p.okBody(content))
}

func (p pvProv) statusStep(status int, headerKV ...string) recoursetest.Step {
	return recoursetest.JSON(status, p.errorBody(status), headerKV...)
}

// rig starts a rig around the provider's codec.
func (p pvProv) rig(t testing.TB, pol retry.Policy, steps ...recoursetest.Step) *rigtest.Rig {
	t.Helper()
	return rigtest.New(t, p.codec(), pol, steps...)
}

// pvJSON encodes v as compact JSON without HTML escaping, as the providers do.
func pvJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// The oMLX fixtures: oMLX answers in the OpenAI Chat Completions shape.
const pvOMLXModel = "mlx-community/Qwen3-4B-Instruct-2507-4bit"

type pvOMLXMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type pvOMLXChoice struct {
	Index        int           `json:"index"`
	Message      pvOMLXMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

type pvOMLXUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type pvOMLXCompletion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []pvOMLXChoice `json:"choices"`
	Usage   pvOMLXUsage    `json:"usage"`
}

// pvOMLXChat is a non-streaming oMLX chat.completion body.
func pvOMLXChat(content string) string {
	return pvJSON(pvOMLXCompletion{
		ID: "chatcmpl-omlx-1", Object: "chat.completion", Created: 1760054400, Model: pvOMLXModel,
		Choices: []pvOMLXChoice{{Message: pvOMLXMessage{Role: "assistant", Content: content}, FinishReason: "stop"}},
		Usage:   pvOMLXUsage{PromptTokens: 12, CompletionTokens: 7, TotalTokens: 19},
	})
}

// pvOMLXError is oMLX's error shape {"error":{"message","type","param","code"}};
// an empty code is null.
func pvOMLXError(typ, code, message string) string {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: message, Type: typ}
	if code != "" {
		b.Code = &code
	}
	return pvJSON(struct {
		Error body `json:"error"`
	}{b})
}

// pvOllamaError is Ollama's error shape {"error":"message"}.
func pvOllamaError(message string) string {
	return pvJSON(struct {
		Error string `json:"error"`
	}{message})
}

// pvCode is the OpenAI-style code and type of an error answer with status.
func pvCode(status int) (typ, code string) {
	switch status {
	case 400:
		return "invalid_request_error", "invalid_request_error"
	case 401:
		return "invalid_request_error", "invalid_api_key"
	case 403:
		return "invalid_request_error", "model_not_found"
	case 429:
		return "requests", "rate_limit_exceeded"
	}
	return "server_error", "server_error"
}

func pvF(v float64) *float64 { return &v }
func pvI(v int) *int         { return &v }

// pvImage is a tiny PNG header: enough bytes for every codec to encode.
var pvImage = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'}

// pvRich builds a request with history, an image, a tool and opts.
func pvRich(model string, opts chat.Options) func() *chat.Request {
	return func() *chat.Request {
		return &chat.Request{
			Model: model,
			Messages: []chat.Message{
				{Role: chat.System, Content: "be brief"},
				{Role: chat.User, Content: rigtest.Prompt, Images: []chat.Image{{MIMEType: "image/png", Data: bytes.Clone(pvImage)}}},
				{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"plan"}`)}}},
				{Role: chat.Tool, ToolCallID: "call_1", ToolName: "lookup", Content: "found"},
			},
			Tools: []chat.ToolSpec{{Name: "lookup", Description: "find a thing",
				Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}},
			Options: pvCloneOptions(opts), // fresh pointers and slices per request
		}
	}
}

// pvCloneOptions deep-copies the pointers and slices of o.
func pvCloneOptions(o chat.Options) chat.Options {
	c := o
	cp := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	ci := func(p *int) *int {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	c.Temperature, c.TopP = cp(o.Temperature), cp(o.TopP)
	c.TopK, c.MaxTokens, c.Seed, c.ContextLength = ci(o.TopK), ci(o.MaxTokens), ci(o.Seed), ci(o.ContextLength)
	c.Stop = append([]string(nil), o.Stop...)
	if o.Think != nil {
		v := *o.Think
		c.Think = &v
	}
	return c
}

// pvClone deep-copies req (messages, tools, schema and options).
func pvClone(req *chat.Request) *chat.Request {
	c := *req
	c.Messages = nil
	for _, m := range req.Messages {
		c.Messages = append(c.Messages, m.Clone())
	}
	c.Tools = nil
	for _, tl := range req.Tools {
		tl.Parameters = append(json.RawMessage(nil), tl.Parameters...)
		c.Tools = append(c.Tools, tl)
	}
	if req.Schema != nil {
		s := *req.Schema
		s.Schema = append(json.RawMessage(nil), req.Schema.Schema...)
		c.Schema = &s
	}
	c.Options = pvCloneOptions(req.Options)
	return &c
}

// pvProviders returns the three provider rows.
func pvProviders() []pvProv {
	canary := func(model string) func() *chat.Request {
		return func() *chat.Request {
			return &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
		}
	}
	return []pvProv{
		{
			name: "openai", provider: codec.OpenAI, model: "gpt-4o-mini", path: "/v1/chat/completions",
			codec:  func() codec.Codec { return openai.New() },
			okBody: recoursetest.OpenAIChat,
			errorBody: func(status int) string {
				typ, code := pvCode(status)
				return recoursetest.OpenAIError(typ, code, "busy")
			},
			codedError: func(code, message string) string { return recoursetest.OpenAIError("error", code, message) },
			request:    canary("gpt-4o-mini"),
			rich: pvRich("gpt-4o-mini", chat.Options{Temperature: pvF(0.25), TopP: pvF(0.5), MaxTokens: pvI(64),
				Stop: []string{"END", "STOP"}, Seed: pvI(7)}),
		},
		{
			name: "omlx", provider: codec.OMLX, model: pvOMLXModel, path: "/v1/chat/completions", needsAdmission: true,
			codec:  func() codec.Codec { return omlx.New() },
			okBody: pvOMLXChat,
			errorBody: func(status int) string {
				typ, code := pvCode(status)
				return pvOMLXError(typ, code, "busy")
			},
			codedError: func(code, message string) string { return pvOMLXError("error", code, message) },
			request:    canary(pvOMLXModel),
			rich: pvRich(pvOMLXModel, chat.Options{Temperature: pvF(0.25), TopP: pvF(0.5), TopK: pvI(40), MaxTokens: pvI(64),
				Stop: []string{"END", "STOP"}, ReasoningEffort: "low"}),
		},
		{
			name: "ollama", provider: codec.Ollama, model: recoursetest.OllamaModel, path: "/api/chat", needsAdmission: true,
			codec:  func() codec.Codec { return ollama.New() },
			okBody: recoursetest.OllamaChat,
			errorBody: func(status int) string {
				switch status {
				case 400:
					return pvOllamaError("invalid request")
				case 401, 403:
					return pvOllamaError("unauthorized")
				case 404:
					return pvOllamaError(`model "llama3.2" not found, try pulling it first`)
				case 429:
					return pvOllamaError("server busy, please try again.  maximum pending requests exceeded")
				}
				return pvOllamaError("server busy, please try again")
			},
			codedError: func(_, message string) string { return pvOllamaError(message) },
			request:    canary(recoursetest.OllamaModel),
			rich: pvRich(recoursetest.OllamaModel, chat.Options{Temperature: pvF(0.25), TopP: pvF(0.5), TopK: pvI(40),
				ContextLength: pvI(8192), MaxTokens: pvI(64), Stop: []string{"END", "STOP"}, Seed: pvI(7)}),
		},
	}
}

// pvRow returns the row of provider.
func pvRow(t testing.TB, provider codec.Provider) pvProv {
	t.Helper()
	for _, p := range pvProviders() {
		if p.provider == provider {
			return p
		}
	}
	t.Fatalf("no %s row", provider)
	return pvProv{}
}

// pvEach runs f once per provider row.
func pvEach(t *testing.T, f func(t *testing.T, p pvProv)) {
	for _, p := range pvProviders() {
		t.Run(p.name, func(t *testing.T) { f(t, p) })
	}
}

// pvRef503 is the R11.3 reference sequence, verbatim.
var pvRef503 = []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
	"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}

// pvInterrupted is the event sequence of a failure that is never resent.
var pvInterrupted = []string{"attempt_started", "attempt_failed", "interrupted"}

// pvAdmissionRequired is the event sequence of R8.3 without a hook.
var pvAdmissionRequired = []string{"attempt_started", "attempt_failed", "admission_required"}

// pvPolicy is a policy with three attempts, zero jitter and an allowing hook.
func pvPolicy() retry.Policy {
	return retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook}
}

// pvCheckPaths asserts that every request went to the provider's endpoint.
func pvCheckPaths(t *testing.T, p pvProv, r *rigtest.Rig) {
	t.Helper()
	for _, q := range r.Server.Requests() {
		assert.Equal(t, "POST", q.Method)
		assert.Equal(t, p.path, q.Path)
	}
}

// pvNotResent checks an ineligible failure: outcome interrupted with reason,
// one POST (R2.1), and no admission or delay event, with or without a hook.
func pvNotResent(t *testing.T, p pvProv, r *rigtest.Rig, err error, reason event.Reason) *layer.RecoveryError {
	t.Helper()
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.Classification{Reason: reason}, re.Failure.Classification)
	assert.Equal(t, p.provider, re.Failure.Provider)
	assert.False(t, re.Failure.RemoteTerminationConfirmed, "R10.2")
	assert.Equal(t, 1, r.Server.Count(), "an ineligible failure is never resent")
	assert.Equal(t, pvInterrupted, r.Rec.Types())
	require.Len(t, re.History, 1)
	pvCheckPaths(t, p, r)
	return re
}

// --- R11.3, R8.3: 503 then success ---------------------------------------

func TestProviders_R11_3_ReferenceSequence503ThenSuccess(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		r := p.rig(t, pvPolicy(), p.statusStep(503), p.okStep("hello"))

		comp, err := r.Client.Complete(context.Background(), p.request())

		require.NoError(t, err)
		assert.Equal(t, "hello", comp.Message.Content)
		assert.Equal(t, pvRef503, r.Rec.Types(), "R11.3: the reference sequence, verbatim")
		assert.Equal(t, 2, r.Server.Count())
		pvCheckPaths(t, p, r)
		evs := r.Rec.Events()
		for _, e := range evs {
			assert.Equal(t, evs[0].LogicalID, e.LogicalID, "R2.5: one logical ID")
			assert.Equal(t, p.provider, e.Provider)
			assert.Equal(t, codec.Ordinary, e.Operation)
		}
		assert.NotEqual(t, evs[0].AttemptID, evs[6].AttemptID, "R2.5: a new attempt ID")
		assert.Equal(t, 2, evs[6].WireAttempt)
		f := firstFailed(t, evs)
		assert.Equal(t, event.CategoryHTTP, f.Category)
		assert.Equal(t, 503, f.HTTPStatus)
		assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
		reqs := r.Server.Requests()
		assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.5: the exact encoded payload")
	})
}

func TestProviders_R8_3_503WithoutHook(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		r := p.rig(t, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, p.statusStep(503), p.okStep("hello"))

		comp, err := r.Client.Complete(context.Background(), p.request())

		if !p.needsAdmission {
			require.NoError(t, err, "R8.3: an eligible OpenAI failure may retry without a hook")
			assert.Equal(t, "hello", comp.Message.Content)
			assert.Equal(t, 2, r.Server.Count())
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
				"attempt_started", "attempt_succeeded"}, r.Rec.Types())
			return
		}
		pvAdmissionRequiredCheck(t, p, r, err, 503)
	})
}

// pvAdmissionRequiredCheck asserts R8.3 for Ollama and oMLX: outcome
// admission_required, exactly one POST, events ending attempt_failed,
// admission_required, and an eligible failure.
func pvAdmissionRequiredCheck(t *testing.T, p pvProv, r *rigtest.Rig, err error, status int) {
	t.Helper()
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeAdmissionRequired, re.Outcome)
	assert.Equal(t, 1, r.Server.Count(), "R8.3: no resend without an explicit Allow")
	assert.Equal(t, pvAdmissionRequired, r.Rec.Types())
	assert.Equal(t, p.provider, re.Failure.Provider)
	assert.Equal(t, status, re.Failure.HTTPStatus)
	assert.True(t, re.Failure.Classification.Eligible, "the failure itself is eligible; admission is what stops it")
	require.Len(t, re.History, 1)
	req := eventsOf(r.Rec.Events(), event.AdmissionRequired)
	require.Len(t, req, 1)
	assert.Equal(t, 2, req[0].NextAttempt)
	require.NotNil(t, req[0].Failure)
}

// --- R11.3: three 504s exhausted ----------------------------------------

func TestProviders_R11_3_ThreeTimeouts504Exhausted15Events(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		step := p.statusStep(504)
		r := p.rig(t, pvPolicy(), step, step, step, p.okStep("never"))

		_, err := r.Client.Complete(context.Background(), p.request())

		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeExhausted, re.Outcome)
		types := r.Rec.Types()
		require.Len(t, types, 15)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, types[12:])
		assert.Equal(t, pvRef503[:6], types[:6])
		assert.Equal(t, pvRef503[:6], types[6:12])
		require.Len(t, re.History, 3)
		assert.Equal(t, re.History[2].AttemptID, re.Failure.AttemptID, "R10.4: the final failure is the last history entry")
		for i, f := range re.History {
			assert.Equal(t, i+1, f.WireAttempt)
			assert.Equal(t, 504, f.HTTPStatus)
			assert.Equal(t, p.provider, f.Provider)
		}
		assert.Equal(t, 3, r.Server.Count())
	})
}

func TestProviders_R8_3_504WithoutHook(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		step := p.statusStep(504)
		r := p.rig(t, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, step, step, step)

		_, err := r.Client.Complete(context.Background(), p.request())

		if !p.needsAdmission {
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeExhausted, re.Outcome)
			assert.Equal(t, 3, r.Server.Count())
			assert.Len(t, r.Rec.Types(), 11, "three attempts, no admission events")
			return
		}
		pvAdmissionRequiredCheck(t, p, r, err, 504)
	})
}

// --- R4.2: 400, 401, 403 are permanent ------------------------------------

func TestProviders_R4_2_PermanentStatuses(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		for _, status := range []int{400, 401, 403} {
			t.Run("HTTP "+strconv.Itoa(status), func(t *testing.T) {
				pol := pvPolicy()
				pol.RetryableStatuses = []int{400, 401, 403, 503} // selecting them changes nothing
				r := p.rig(t, pol, p.statusStep(status), p.okStep("never"))

				_, err := r.Client.Complete(context.Background(), p.request())

				re := pvNotResent(t, p, r, err, event.ReasonPermanent)
				assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
				assert.Equal(t, status, re.Failure.HTTPStatus)
				assert.Equal(t, event.AcceptanceUnknown, re.Failure.Acceptance)
			})
		}
	})
}

// --- R5: 429 with Retry-After seconds ------------------------------------

func TestProviders_R5_429RetryAfterSeconds(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		for _, hook := range []bool{true, false} {
			name := "with hook"
			if !hook {
				name = "without hook"
			}
			t.Run(name, func(t *testing.T) {
				pol := retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}
				if hook {
					pol.Admit = allowHook
				}
				r := p.rig(t, pol, p.statusStep(429, "Retry-After", "2"), p.okStep("later"))

				comp, err := r.Client.Complete(context.Background(), p.request())

				f := firstFailed(t, r.Rec.Events())
				assert.Equal(t, 429, f.HTTPStatus)
				assert.Equal(t, event.RetryAfter{Kind: event.RetryAfterSeconds, Delay: 2 * time.Second}, f.RetryAfter, "R5.1: seconds")
				assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
				if !hook && p.needsAdmission {
					pvAdmissionRequiredCheck(t, p, r, err, 429)
					assert.Empty(t, r.Clock.Sleeps(), "nothing was scheduled")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "later", comp.Message.Content)
				assert.Equal(t, 2, r.Server.Count())
				delays := eventsOf(r.Rec.Events(), event.DelayScheduled)
				require.Len(t, delays, 1)
				assert.Equal(t, 2*time.Second, delays[0].Delay, "R5.5: Retry-After is a minimum over the jittered 0")
				assert.Equal(t, []time.Duration{2 * time.Second}, r.Clock.Sleeps())
			})
		}
	})
}

// --- R2.2: redirects and 421 ---------------------------------------------

func TestProviders_R2_2_Redirect307NothingFollows(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		target := recoursetest.NewTarget()
		defer target.Close()
		r := p.rig(t, pvPolicy(), recoursetest.Redirect(307, target.URL+p.path), p.okStep("never"))

		_, err := r.Client.Complete(context.Background(), p.request())

		re := pvNotResent(t, p, r, err, event.ReasonPermanent)
		assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
		assert.Equal(t, 307, re.Failure.HTTPStatus)
		assert.Equal(t, 0, target.Hits(), "R2.2: the Location is never contacted")
	})
}

func TestProviders_R2_2_421NotRetried(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		r := p.rig(t, pvPolicy(), p.statusStep(421), p.okStep("never"))

		_, err := r.Client.Complete(context.Background(), p.request())

		re := pvNotResent(t, p, r, err, event.ReasonPermanent)
		assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
		assert.Equal(t, 421, re.Failure.HTTPStatus)
	})
}

// --- R4.7: a reset before headers is eligible -----------------------------

func TestProviders_R4_7_ResetBeforeHeadersIsEligible(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		t.Run("with hook", func(t *testing.T) {
			r := p.rig(t, pvPolicy(), recoursetest.Reset(), p.okStep("after reset"))

			comp, err := r.Client.Complete(context.Background(), p.request())

			require.NoError(t, err)
			assert.Equal(t, "after reset", comp.Message.Content)
			assert.Equal(t, pvRef503, r.Rec.Types())
			assert.Equal(t, 2, r.Server.Count())
			f := firstFailed(t, r.Rec.Events())
			assert.Equal(t, event.CategoryTransport, f.Category)
			assert.Equal(t, 0, f.HTTPStatus)
			assert.Equal(t, event.AcceptanceUnknown, f.Acceptance, "the request may have reached the server")
			assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
			assert.False(t, f.Progress.HeadersReceived)
		})
		t.Run("without hook", func(t *testing.T) {
			r := p.rig(t, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, recoursetest.Reset(), p.okStep("after reset"))

			_, err := r.Client.Complete(context.Background(), p.request())

			if p.needsAdmission {
				pvAdmissionRequiredCheck(t, p, r, err, 0)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 2, r.Server.Count())
		})
	})
}

// R8.3 reads "ambiguous" Ollama and oMLX failures (seed 000: "ambiguous
// Ollama and oMLX failures still require admission"): a failure that
// provably sent nothing (connection refused, acceptance "no") is not an
// ambiguous execution, so it is retried without a hook like OpenAI's
// (package admission documents this).
func TestProviders_R8_3_NothingSentNeedsNoAdmission(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		r := p.rig(t, retry.Policy{MaxAttempts: 2, Jitter: zeroJitter})
		cl, err := client.New("http://"+addr, r.Chain, client.WithAPIKey(rigtest.Key))
		require.NoError(t, err)

		_, err = cl.Complete(context.Background(), p.request())

		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeExhausted, re.Outcome, "both attempts were made")
		require.Len(t, re.History, 2)
		for _, f := range re.History {
			assert.Equal(t, event.CategoryTransport, f.Category)
			assert.Equal(t, event.AcceptanceNo, f.Acceptance)
		}
		assert.Empty(t, eventsOf(r.Rec.Events(), event.AdmissionRequired))
	})
}

// --- R4.4, R4.6: partial 2xx bodies fail closed ---------------------------

// pvCutAfterContent cuts the 200 body right after `"content":"Hel`.
func (p pvProv) cutAfterContent() recoursetest.Step {
	body := p.okBody("Hello, world")
	i := strings.Index(body, `"content":"Hel`)
	if i < 0 {
		panic("no content in " + p.name + " body")
	}
	return recoursetest.JSON(200, body).Cut(i + len(`"content":"Hel`))
}

func TestProviders_R4_6_Partial2xxBodyFailsClosed(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		rows := []struct {
			name     string
			step     recoursetest.Step
			reason   event.Reason
			observed int64
		}{
			{"cut before any semantic output", recoursetest.JSON(200, p.okBody("Hello, world")).Cut(10), event.ReasonPartialResponse, 0},
			{"headers then cut before the first body byte", recoursetest.JSON(200, "", "Content-Length", "64").Cut(1), event.ReasonPartialResponse, 0},
			{"cut after content", p.cutAfterContent(), event.ReasonSemanticOutput, 3},
		}
		for _, tc := range rows {
			for _, structured := range []bool{false, true} {
				t.Run(tc.name+"/structured="+strconv.FormatBool(structured), func(t *testing.T) {
					r := p.rig(t, pvPolicy(), tc.step, p.okStep("never"))

					var err error
					if structured {
						_, err = r.Client.CompleteStructured(context.Background(), p.request(), chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)})
					} else {
						_, err = r.Client.Complete(context.Background(), p.request())
					}

					re := pvNotResent(t, p, r, err, tc.reason)
					assert.Equal(t, event.CategoryTransport, re.Failure.Category)
					assert.Equal(t, 200, re.Failure.HTTPStatus)
					assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
					assert.Equal(t, tc.observed, re.Failure.Progress.Observed.ContentBytes)
					assert.Zero(t, re.Failure.Progress.Delivered.ContentBytes, "nothing was delivered")
					if structured {
						assert.Equal(t, codec.Structured, re.Failure.Operation)
					} else {
						assert.Equal(t, codec.Ordinary, re.Failure.Operation)
					}
				})
			}
		}
	})
}

// --- R4.7: a provider error object in a 200 is never eligible -------------

func TestProviders_R4_7_ProviderErrorIn200NeverRetried(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		pol := pvPolicy()
		pol.RetryableCategories = []event.Category{event.CategoryTransport, event.CategoryHTTP, event.CategoryProviderResponse}
		r := p.rig(t, pol, recoursetest.JSON(200, p.codedError("server_error", "the model runner stopped")), p.okStep("never"))

		_, err := r.Client.Complete(context.Background(), p.request())

		re := pvNotResent(t, p, r, err, event.ReasonPermanent)
		assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
		assert.Equal(t, 200, re.Failure.HTTPStatus)
		assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
		ev := event.Inspect(&re.Failure)
		require.NotNil(t, ev)
		var pe *codec.ProviderError
		require.ErrorAs(t, ev.Cause, &pe)
		assert.Equal(t, "the model runner stopped", pe.Message)
	})
}

// --- R4.5: malformed 200 --------------------------------------------------

func TestProviders_R4_5_Malformed200(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		for _, body := range []string{`{"id":"x",,}`, `not json`, `{}`, `[]`} {
			t.Run(body, func(t *testing.T) {
				pol := pvPolicy()
				pol.RetryableCategories = []event.Category{event.CategoryTransport, event.CategoryHTTP, event.CategoryProtocol}
				r := p.rig(t, pol, recoursetest.JSON(200, body), p.okStep("never"))

				_, err := r.Client.Complete(context.Background(), p.request())

				re := pvNotResent(t, p, r, err, event.ReasonMalformed)
				assert.Equal(t, event.CategoryProtocol, re.Failure.Category)
				assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
				assert.Equal(t, event.PhaseDecoding, re.Failure.Phase)
				var pe *codec.ProtocolError
				assert.ErrorAs(t, event.Inspect(&re.Failure).Cause, &pe)
			})
		}
	})
}

// --- R12.3, R10.4: capture failures ---------------------------------------

var errPvCapture = errors.New("capture store is full")

func TestProviders_R10_4_RequestCaptureFailureSendsNothing(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		pol := pvPolicy()
		pol.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
			if s.Direction == layer.DirectionRequest {
				return errPvCapture
			}
			return nil
		}
		r := p.rig(t, pol, p.okStep("never"))

		_, err := r.Client.Complete(context.Background(), p.request())

		re := asRecoveryError(t, err)
		assert.Equal(t, 0, r.Server.Count(), "R12.3: a request-capture failure sends nothing")
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.Classification{Reason: event.ReasonCaptureFailed}, re.Failure.Classification)
		assert.Equal(t, 0, re.Failure.WireAttempt, "R10.4: wire attempt 0")
		assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
		assert.Equal(t, p.provider, re.Failure.Provider)
		assert.Empty(t, re.History)
		assert.Equal(t, []string{"interrupted"}, r.Rec.Types())
		assert.Same(t, errPvCapture, event.Inspect(&re.Failure).CaptureCause)
	})
}

func TestProviders_R12_3_ResponseCaptureFailureIsTerminal(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		for _, tc := range []struct {
			name   string
			step   recoursetest.Step
			status int
		}{{"on a retryable 503", p.statusStep(503), 503}, {"on a 200", p.okStep("fine"), 200}} {
			t.Run(tc.name, func(t *testing.T) {
				pol := pvPolicy()
				pol.OnWire = failResponseCapture
				r := p.rig(t, pol, tc.step, p.okStep("never"))

				_, err := r.Client.Complete(context.Background(), p.request())

				re := pvNotResent(t, p, r, err, event.ReasonCaptureFailed)
				assert.Equal(t, tc.status, re.Failure.HTTPStatus)
				assert.Equal(t, errCaptureHook, event.Inspect(&re.Failure).CaptureCause)
			})
		}
	})
}

// --- R9.2: cancelled before start -----------------------------------------

func TestProviders_R9_2_CancelledBeforeStart(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		pol := pvPolicy()
		rec := wired(&pol)
		r := p.rig(t, pol, p.okStep("never"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()

		_, err := r.Client.Complete(ctx, p.request())

		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, re.History)
		assert.Equal(t, 0, re.Failure.WireAttempt)
		assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
		assert.Equal(t, p.provider, re.Failure.Provider)
		assert.Equal(t, []string{"cancelled"}, rec.Types())
		assert.Empty(t, rec.Wire(), "R9.2: no capture")
		assert.Equal(t, 0, r.Server.Count(), "R9.2: no send")
	})
}

// --- R9.2: cancelled during an attempt -------------------------------------

func TestProviders_R9_2_CancelledDuringTheAttempt(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		r := p.rig(t, pvPolicy(), recoursetest.Step{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}}.Held())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := r.Client.Complete(ctx, p.request())
			done <- err
		}()
		require.Eventually(t, func() bool { return r.Server.Count() == 1 }, wait, time.Millisecond)
		cancel()

		err := awaitResult(t, done)

		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, r.Rec.Types(),
			"R9.2: the failed attempt is recorded before exactly one cancelled event")
		require.Len(t, re.History, 1)
		assert.Equal(t, event.CategoryCancellation, re.Failure.Category)
		assert.False(t, re.Failure.RemoteTerminationConfirmed, "R9.3")
		assert.Equal(t, 1, r.Server.Count())
		select {
		case <-r.Server.Left():
		case <-time.After(wait):
			t.Fatal("R9.3: the server never saw the local request close")
		}
	})
}

// --- R1.1: without recovery, one plain POST -------------------------------

func TestProviders_R1_1_WithoutRecoveryIsOnePlainPost(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		srv := startServer(t, p.statusStep(503), p.okStep("plain"))
		var events []event.Event
		ch, err := chain.Default(p.codec(), chain.WithoutRecovery(), chain.WithTransport(newTransport(t)))
		require.NoError(t, err)
		cl, err := client.New(srv.URL, ch, client.WithAPIKey(rigtest.Key))
		require.NoError(t, err)
		ctx := withObserver(context.Background(), func(e event.Event) { events = append(events, e) })

		_, err = cl.Complete(ctx, p.request())

		var se *client.StatusError
		require.ErrorAs(t, err, &se, "R1.1: the same error as a plain POST")
		assert.Equal(t, 503, se.StatusCode)
		assert.Equal(t, p.errorBody(503), string(se.Body))
		var re *layer.RecoveryError
		assert.NotErrorAs(t, err, &re)
		assert.Equal(t, 1, srv.Count())

		comp, err := cl.Complete(ctx, p.request())
		require.NoError(t, err)
		assert.Equal(t, "plain", comp.Message.Content)
		assert.Empty(t, events, "R1.1: no events")
		assert.Equal(t, 2, srv.Count())
	})
}

// --- R12.2: one request and one response snapshot per attempt --------------

func TestProviders_R12_2_OneRequestAndOneResponseSnapshotPerAttempt(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		pol := pvPolicy()
		rec := wired(&pol)
		r := p.rig(t, pol, p.statusStep(503), recoursetest.Reset(), p.okStep("hello"))

		_, err := r.Client.Complete(context.Background(), p.request())
		require.NoError(t, err)

		snaps := rec.Wire()
		require.Len(t, snaps, 6, "R12.2: one request and one response snapshot per attempt")
		started := eventsOf(rec.Events(), event.AttemptStarted)
		require.Len(t, started, 3)
		reqs := r.Server.Requests()
		require.Len(t, reqs, 3)
		wantStatus := []int{503, 0, 200}
		wantBytes := []string{p.errorBody(503), "", p.okBody("hello")}
		for i := range 3 {
			q, s := snaps[2*i], snaps[2*i+1]
			assert.Equal(t, layer.DirectionRequest, q.Direction)
			assert.Equal(t, layer.DirectionResponse, s.Direction)
			assert.Equal(t, started[i].Identity, q.Identity)
			assert.Equal(t, started[i].Identity, s.Identity)
			assert.Equal(t, reqs[i].Body, q.Bytes, "the request snapshot is the bytes sent")
			assert.Equal(t, "Bearer "+rigtest.Key, q.Header.Get("Authorization"))
			assert.Equal(t, wantStatus[i], s.Status)
			assert.Equal(t, wantBytes[i], string(s.Bytes))
			assert.Equal(t, i != 1, s.Complete, "a reset before headers is incomplete")
		}
	})
}

// --- R2.4: no invented identity or idempotency header -----------------------

func TestProviders_R2_4_NoInventedHeaders(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		pol := pvPolicy()
		rec := wired(&pol)
		r := p.rig(t, pol, p.statusStep(503), recoursetest.Reset(), p.okStep("ok"))

		_, err := r.Client.Complete(context.Background(), p.request())
		require.NoError(t, err)

		var ids []string
		for _, e := range rec.Events() {
			ids = append(ids, e.LogicalID, e.AttemptID)
		}
		reqs := r.Server.Requests()
		require.Len(t, reqs, 3)
		for i, q := range reqs {
			assert.Equal(t, []string{"Accept", "Accept-Encoding", "Authorization", "Content-Length", "Content-Type", "User-Agent"},
				headerNames(q.Header), "R2.4: attempt %d has the header names of a plain POST", i+1)
			for name, vs := range q.Header {
				for _, v := range vs {
					for _, id := range ids {
						if id != "" {
							assert.NotContains(t, v, id, "R2.4: %s carries a local identity", name)
						}
					}
				}
			}
			for _, id := range ids {
				if id != "" {
					assert.NotContains(t, string(q.Body), id, "R2.4: nor does the body")
				}
			}
		}
	})
}
