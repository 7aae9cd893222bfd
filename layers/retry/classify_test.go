package retry_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// cutAfterContent is a 200 ordinary body cut right after `"content":"Hel`:
// the attempt observed 3 content bytes that nobody received.
func cutAfterContent() recoursetest.Step {
	body := recoursetest.OpenAIChat("Hello, world")
	i := strings.Index(body, `"content":"Hel`)
	return recoursetest.JSON(200, body).Cut(i + len(`"content":"Hel`))
}

var errCaptureHook = rigtest.ErrCaptureHook

// failResponseCapture is an OnWire hook that fails on every response snapshot.
var failResponseCapture = rigtest.FailResponseCapture

func TestR4_ClassificationTable(t *testing.T) {
	rows := []struct {
		name       string
		policy     func(*retry.Policy)
		step       recoursetest.Step
		structured bool
		category   event.Category
		status     int
		acceptance event.Acceptance
		eligible   bool
		reason     event.Reason
	}{
		// R4.2: 400, 401, 403 stay permanent even when the caller selects them.
		{name: "400 selected", policy: selectStatuses(400, 401, 403, 503), step: statusStep(400), category: event.CategoryHTTP, status: 400, reason: event.ReasonPermanent},
		{name: "401 selected", policy: selectStatuses(400, 401, 403, 503), step: statusStep(401), category: event.CategoryHTTP, status: 401, reason: event.ReasonPermanent},
		{name: "403 selected", policy: selectStatuses(400, 401, 403, 503), step: statusStep(403), category: event.CategoryHTTP, status: 403, reason: event.ReasonPermanent},
		{name: "400 body cut", policy: selectStatuses(400, 503), step: statusStep(400).Cut(10), category: event.CategoryHTTP, status: 400, reason: event.ReasonPermanent},
		{name: "404", step: statusStep(404), category: event.CategoryHTTP, status: 404, reason: event.ReasonPermanent},
		{name: "421", step: statusStep(421), category: event.CategoryHTTP, status: 421, reason: event.ReasonPermanent},
		{name: "409 default", step: statusStep(409), category: event.CategoryHTTP, status: 409, reason: event.ReasonPermanent},
		// R4.7 defaults.
		{name: "429", step: statusStep(429), category: event.CategoryHTTP, status: 429, eligible: true, reason: event.ReasonTransient},
		{name: "500", step: statusStep(500), category: event.CategoryHTTP, status: 500, eligible: true, reason: event.ReasonTransient},
		{name: "502", step: statusStep(502), category: event.CategoryHTTP, status: 502, eligible: true, reason: event.ReasonTransient},
		{name: "503", step: statusStep(503), category: event.CategoryHTTP, status: 503, eligible: true, reason: event.ReasonTransient},
		{name: "504", step: statusStep(504), category: event.CategoryHTTP, status: 504, eligible: true, reason: event.ReasonTransient},
		{name: "503 body cut", step: statusStep(503).Cut(10), category: event.CategoryHTTP, status: 503, eligible: true, reason: event.ReasonTransient},
		// Custom selections: HTTP needs both the category and the status.
		{name: "409 selected", policy: selectStatuses(409), step: statusStep(409), category: event.CategoryHTTP, status: 409, eligible: true, reason: event.ReasonTransient},
		{name: "503 not selected", policy: selectStatuses(409), step: statusStep(503), category: event.CategoryHTTP, status: 503, reason: event.ReasonPermanent},
		{name: "503 category not selected", policy: selectCategories(event.CategoryTransport), step: statusStep(503), category: event.CategoryHTTP, status: 503, reason: event.ReasonPermanent},
		// Transport before headers: eligible, acceptance unknown.
		{name: "reset before headers", step: recoursetest.Reset(), category: event.CategoryTransport, acceptance: event.AcceptanceUnknown, eligible: true, reason: event.ReasonTransient},
		{name: "reset, transport not selected", policy: selectCategories(event.CategoryHTTP), step: recoursetest.Reset(), category: event.CategoryTransport, acceptance: event.AcceptanceUnknown, reason: event.ReasonPermanent},
		// R4.4: observed semantic output, never delivered.
		{name: "200 cut after content", step: cutAfterContent(), category: event.CategoryTransport, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonSemanticOutput},
		// R4.6: a partial 2xx body without semantic evidence (oMLX-like blank prelude).
		{name: "200 blank body cut", step: recoursetest.JSON(200, strings.Repeat(" ", 64)).Cut(16), category: event.CategoryTransport, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonPartialResponse},
		// R4.6 and R10.2: a 2xx response was accepted; its body ending before
		// the first of its Content-Length bytes is still a partial body.
		{name: "200 headers then cut before any body byte", step: recoursetest.JSON(200, "", "Content-Length", "64").Cut(1), category: event.CategoryTransport, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonPartialResponse},
		// R4.7: a provider error object in a 2xx body is never eligible.
		{name: "200 provider error", step: recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "overloaded")), category: event.CategoryProviderResponse, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonPermanent},
		{name: "200 provider error, category selected", policy: selectCategories(event.CategoryTransport, event.CategoryHTTP, event.CategoryProviderResponse),
			step: recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "overloaded")), category: event.CategoryProviderResponse, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonPermanent},
		// R4.5: protocol errors.
		{name: "200 malformed JSON", step: recoursetest.JSON(200, `{"id":"chatcmpl-1","choices":[{"index":0,,}]}`), category: event.CategoryProtocol, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonMalformed},
		{name: "200 malformed JSON, protocol selected", policy: selectCategories(event.CategoryTransport, event.CategoryHTTP, event.CategoryProtocol),
			step: recoursetest.JSON(200, `not json`), category: event.CategoryProtocol, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonMalformed},
		{name: "200 no choices", step: recoursetest.JSON(200, `{"id":"chatcmpl-1","choices":[]}`), category: event.CategoryProtocol, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonMalformed},
		{name: "structured empty content", structured: true, step: okStep(""), category: event.CategoryProtocol, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonMalformed},
		// A structured answer whose content is not JSON is a protocol error,
		// but its content bytes were observed: R4 is first-match-wins and
		// rule 4 (semantic_output) precedes rule 5 (malformed).
		{name: "structured content not JSON", structured: true, step: okStep("not json at all"), category: event.CategoryProtocol, status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonSemanticOutput},
		// R4.3 / R12.3: a capture failure is terminal, even for a retryable status.
		{name: "response capture fails on 503", policy: func(p *retry.Policy) { p.OnWire = failResponseCapture }, step: statusStep(503), category: event.CategoryHTTP, status: 503, reason: event.ReasonCaptureFailed},
		{name: "response capture fails on 200", policy: func(p *retry.Policy) { p.OnWire = failResponseCapture }, step: okStep("fine"), status: 200, acceptance: event.AcceptanceYes, reason: event.ReasonCaptureFailed},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			p := retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}
			if tc.policy != nil {
				tc.policy(&p)
			}
			next := okStep("second")
			if tc.structured {
				next = okStep(`{"second":true}`)
			}
			r := rigtest.New(t, openai.New(), p, tc.step, next)

			var err error
			if tc.structured {
				_, err = r.Client.CompleteStructured(context.Background(), canaryRequest(), chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)})
			} else {
				_, err = r.Client.Complete(context.Background(), canaryRequest())
			}

			f := firstFailed(t, r.Rec.Events())
			if tc.category != "" {
				assert.Equal(t, tc.category, f.Category, "category")
			}
			assert.Equal(t, tc.status, f.HTTPStatus, "status")
			if tc.acceptance != "" {
				assert.Equal(t, tc.acceptance, f.Acceptance, "acceptance")
			}
			assert.Equal(t, event.Classification{Eligible: tc.eligible, Reason: tc.reason}, f.Classification)
			assert.False(t, f.RemoteTerminationConfirmed, "R10.2")
			assert.Equal(t, codec.OpenAI, f.Provider)
			if tc.structured {
				assert.Equal(t, codec.Structured, f.Operation)
			} else {
				assert.Equal(t, codec.Ordinary, f.Operation)
			}
			if tc.eligible {
				require.NoError(t, err, "an eligible OpenAI failure is retried without a hook (R8.3)")
				assert.Equal(t, 2, r.Server.Count(), "one POST per attempt")
				return
			}
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, tc.reason, re.Failure.Classification.Reason)
			assert.Equal(t, 1, r.Server.Count(), "an ineligible failure is never resent")
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, r.Rec.Types())
		})
	}
}

func selectStatuses(s ...int) func(*retry.Policy) {
	return func(p *retry.Policy) { p.RetryableStatuses = s }
}

func selectCategories(c ...event.Category) func(*retry.Policy) {
	return func(p *retry.Policy) { p.RetryableCategories = c }
}

// R4.4 detail: the semantic evidence of a cut body is in the failure's progress.
func TestR4_4_CutBodyRecordsObservedContent(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, cutAfterContent(), okStep("never"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)
	assert.Equal(t, int64(3), re.Failure.Progress.Observed.ContentBytes, `"Hel" is 3 bytes`)
	assert.Equal(t, int64(0), re.Failure.Progress.Delivered.ContentBytes, "nothing was delivered")
	assert.True(t, re.Failure.Progress.HeadersReceived)
	assert.Positive(t, re.Failure.Progress.RawBytes)
}

// R10.2: acceptance is "no" only when provably nothing was sent.
func TestR10_2_ConnectionRefusedIsAcceptanceNo(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter})
	cl, err := client.New("http://"+addr, r.Chain, client.WithAPIKey(rigtest.Key))
	require.NoError(t, err)
	_, err = cl.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome, "transport is eligible: both attempts were made")
	require.Len(t, re.History, 2)
	for _, f := range re.History {
		assert.Equal(t, event.CategoryTransport, f.Category)
		assert.Equal(t, event.AcceptanceNo, f.Acceptance)
		assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
	}
}
