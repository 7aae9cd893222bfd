package otelbridge

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// call is the tracing state of one logical completion. The retry layer
// delivers events synchronously, from the goroutine that runs RoundTrip or
// reads the stream; the mutex also orders them against Close.
type call struct {
	l      *Layer
	parent context.Context
	req    *http.Request
	start  time.Time
	report *layer.Call // the call's per-call value: never nil
	target target

	mu       sync.Mutex
	logical  trace.Span
	lctx     context.Context
	named    bool           // the logical span has its model name and attributes
	model    string         // the requested model
	provider codec.Provider // the codec's provider
	attempt  trace.Span
	attempts int
	// succeeded: attempt_succeeded was seen.
	succeeded bool
	// terminal is the last terminal event (exhausted, interrupted,
	// cancelled, or an admission outcome); its span event is added when the
	// span ends, with the exact outcome.
	terminal     *event.Event
	terminalTime time.Time
	metrics      *codec.Metrics
	status       int // the response status RoundTrip returned
	// outputSeen: the time to first output was recorded.
	outputSeen bool
	ended      bool
	tgt        targetState // the current fallback target (R20.6), if any
}

func newCall(l *Layer, req *http.Request, lc *layer.Call, start time.Time) *call {
	return &call{
		l: l, parent: req.Context(), req: req, start: start,
		report: lc, target: targetOf(req),
	}
}

// startLogical starts the logical span if it has not started yet, named
// after ev's model when ev is not nil. c.mu must be held.
func (c *call) startLogical(ev *event.Event) {
	if c.logical != nil {
		if !c.named && ev != nil {
			c.named = true
			c.logical.SetName(spanName(ev.Model))
			c.logical.SetAttributes(c.genAIAttributes(ev)...)
		}
		return
	}
	attrs := []attribute.KeyValue{keyOperationName.String(operationChat)}
	name := spanName("")
	if ev != nil {
		c.named = true
		name = spanName(ev.Model)
		attrs = append(attrs, c.genAIAttributes(ev)...)
	}
	attrs = append(attrs, c.target.server()...)
	attrs = append(attrs, c.l.extra...)
	c.lctx, c.logical = c.l.tracer.Start(c.parent, name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(c.start),
		trace.WithAttributes(attrs...))
}

func spanName(model string) string {
	if model == "" {
		return operationChat
	}
	return operationChat + " " + model
}

// genAIAttributes are the attributes the first event teaches.
func (c *call) genAIAttributes(ev *event.Event) []attribute.KeyValue {
	c.model, c.provider = ev.Model, ev.Provider
	var a []attribute.KeyValue
	if ev.Provider != "" {
		a = append(a, keyProviderName.String(providerName(ev.Provider)))
	}
	if ev.Model != "" {
		a = append(a, keyRequestModel.String(ev.Model))
	}
	if ev.Operation != "" {
		a = append(a, keyOperation.String(string(ev.Operation)))
	}
	if ev.Operation == codec.Streaming {
		a = append(a, keyRequestStream.Bool(true))
	}
	if ev.LogicalID != "" {
		a = append(a, keyLogicalID.String(ev.LogicalID))
	}
	return a
}

// observe receives every lifecycle event of the call.
// It is one function of more than 80 lines because it is one switch over the
// event types under the call's lock, each case a few lines that update the
// call's spans; split, every piece would have to take or assume the lock.
func (c *call) observe(ev event.Event) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.startLogical(&ev)
	c.noteLogicalID(&ev)
	c.measure(&ev)
	switch ev.Type {
	case event.AttemptStarted:
		c.endAttempt("")
		c.attempts = max(c.attempts, c.tgt.base+ev.WireAttempt)
		attrs := append([]attribute.KeyValue{semconv.HTTPRequestMethodKey.String(c.target.method)}, c.target.attempt()...)
		if ev.WireAttempt > 1 {
			attrs = append(attrs, semconv.HTTPRequestResendCount(ev.WireAttempt-1))
		}
		if ev.AttemptID != "" {
			attrs = append(attrs, keyAttemptID.String(ev.AttemptID))
		}
		name := c.target.spanName()
		if r := ev.Resume; r != nil {
			// A resume read of a background stream (R19.10): a GET of the
			// same response after the cursor. url.full stays the call's,
			// which names no response.
			name = http.MethodGet
			attrs[0] = semconv.HTTPRequestMethodKey.String(http.MethodGet)
			attrs = append(attrs, keyResumeCursor.Int64(r.Cursor))
		}
		_, c.attempt = c.l.tracer.Start(c.attemptParent(), name,
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(now),
			trace.WithAttributes(append(attrs, c.l.extra...)...))
	case event.AttemptSucceeded:
		c.succeeded = true
		if c.attempt != nil {
			c.countAttempt(attemptSucceeded, ev.HTTPStatus, "")
			if ev.HTTPStatus != 0 {
				c.attempt.SetAttributes(semconv.HTTPResponseStatusCode(ev.HTTPStatus))
			}
			c.attempt.End(trace.WithTimestamp(now))
			c.attempt = nil
		}
	case event.AttemptFailed:
		if c.attempt != nil {
			if ev.HTTPStatus != 0 {
				c.attempt.SetAttributes(semconv.HTTPResponseStatusCode(ev.HTTPStatus))
			}
			if f := ev.Failure; f != nil && f.Usage != nil {
				// What the discarded attempt reported it cost (R22.10).
				c.attempt.SetAttributes(keyInputTokens.Int(f.Usage.InputTokens), keyOutputTokens.Int(f.Usage.OutputTokens))
			}
			et := ""
			if f := ev.Failure; f != nil && f.Category != event.CategoryCancellation {
				et = errorType(f)
				c.attempt.SetAttributes(semconv.ErrorTypeKey.String(et))
				c.attempt.SetAttributes(failureMarks(f)...)
				// No description when the status code says it all
				// (HTTP conventions); otherwise the failure category.
				desc := et
				if f.Category == event.CategoryHTTP && f.HTTPStatus != 0 {
					desc = ""
				}
				if f.Stall != "" {
					desc = string(f.Stall)
				}
				c.attempt.SetStatus(codes.Error, desc)
			}
			var marks []attribute.KeyValue
			if et != "" {
				marks = failureMarks(ev.Failure)
			}
			c.countAttempt(attemptFailed, ev.HTTPStatus, et, marks...)
			c.attempt.End(trace.WithTimestamp(now))
			c.attempt = nil
		}
	case event.AdmissionPending, event.AdmissionAllowed, event.DelayScheduled, event.RetryStarted,
		event.QuotaRefused, event.QuotaUnavailable, event.CooldownWait, event.Breaker:
		c.logical.AddEvent(eventName(ev.Type), trace.WithTimestamp(now), trace.WithAttributes(eventAttributes(&ev)...))
	case event.AdmissionRejected, event.AdmissionNoDecision, event.AdmissionRequired,
		event.Exhausted, event.Interrupted, event.Cancelled:
		e := ev
		c.terminal, c.terminalTime = &e, now
	case event.TargetStarted:
		if ev.Fallback != nil {
			c.endAttempt("")
			c.startTarget(&ev, now)
		}
	case event.Fallback:
		c.fellBack(&ev, now)
	case event.Metrics:
		if ev.Metrics != nil {
			m := *ev.Metrics
			c.metrics = &m
		}
	}
}

// endAttempt ends an attempt span left open (no attempt_failed came: an
// observer error, a consumer that closed the stream) and counts it: as
// failed with error.type errType when the call failed (errType is not
// empty), otherwise as closed. c.mu must be held.
func (c *call) endAttempt(errType string) {
	if c.attempt == nil {
		return
	}
	if errType != "" {
		c.attempt.SetAttributes(semconv.ErrorTypeKey.String(errType))
		c.attempt.SetStatus(codes.Error, errType)
		c.countAttempt(attemptFailed, 0, errType)
	} else {
		c.countAttempt(attemptClosed, 0, "")
	}
	c.attempt.End()
	c.attempt = nil
}

// responded records the response RoundTrip returned.
func (c *call) responded(resp *http.Response) {
	c.mu.Lock()
	c.status = resp.StatusCode
	c.mu.Unlock()
}

// How a call ended.
type endKind int

const (
	endEOF   endKind = iota // the body (or frame reader) reached its end
	endError                // RoundTrip or the body returned an error
	endClose                // the caller closed the body
)

// end ends the logical span once, with the outcome of the call.
func (c *call) end(how endKind, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.startLogical(nil)
	c.ended = true
	res := c.result(how, err)
	if res.failed {
		c.endAttempt(res.errorType)
	} else {
		c.endAttempt("")
	}
	c.measureEnd(res)
	if s := c.tgt.span; s != nil && res.outcome != "" {
		// The last target's span says how the call ended on it, as a
		// target that was left says why (fellBack).
		s.SetAttributes(keyOutcome.String(res.outcome))
		if res.failed {
			s.SetStatus(codes.Error, "recourse: "+res.outcome)
		}
	}
	c.endTarget(time.Now())
	if t := c.terminal; t != nil {
		attrs := eventAttributes(t)
		if res.outcome != "" {
			attrs = append(attrs, keyOutcome.String(res.outcome))
		}
		c.logical.AddEvent(eventName(t.Type), trace.WithTimestamp(c.terminalTime), trace.WithAttributes(attrs...))
	}
	var attrs []attribute.KeyValue
	if res.outcome != "" {
		attrs = append(attrs, keyOutcome.String(res.outcome))
	}
	if c.attempts > 0 || res.outcome != "" {
		attrs = append(attrs, keyAttempts.Int(c.attempts))
	}
	if res.outcome == outcomeSuccess {
		attrs = append(attrs, c.responseAttributes()...)
	}
	if res.failed {
		attrs = append(attrs, semconv.ErrorTypeKey.String(res.errorType))
		c.logical.SetStatus(codes.Error, res.description)
	}
	c.logical.SetAttributes(attrs...)
	c.logical.End()
}

// The recourse.outcome values beside the outcomes event.Outcomes lists.
const (
	outcomeSuccess = "success"
	outcomeClosed  = "closed"
	outcomeError   = "error"
)

type result struct {
	outcome     string
	failed      bool
	errorType   string
	description string // safe
	// marks are the final failure's stall limit and provider hint
	// (failureMarks), for recourse.client.outcomes.
	marks []attribute.KeyValue
}

// result decides the outcome of the call. c.mu must be held.
func (c *call) result(how endKind, err error) result {
	var re *layer.RecoveryError
	if err == nil && c.report.Result.Err != nil {
		err = c.report.Result.Err
	}
	switch {
	case err != nil && errors.As(err, &re):
		if how == endClose && re.Outcome == event.OutcomeCancelled &&
			!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			// The caller closed the stream before its end: the engine
			// ends that lifecycle as cancelled (R13.5); the span keeps
			// saying that the caller closed it.
			return result{outcome: outcomeClosed}
		}
		return recoveryResult(re.Outcome, &re.Failure, err, re.Error())
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return recoveryResult(event.OutcomeCancelled, nil, err, "")
	case err != nil:
		et := semconv.ErrorTypeOther.Value.AsString()
		var pe *layer.PolicyError
		var oe *layer.ObserverError
		switch {
		case errors.As(err, &pe):
			et = "policy_error"
		case errors.As(err, &oe):
			et = "observer_error"
		}
		return result{outcome: outcomeError, failed: true, errorType: et, description: "recourse: " + et}
	case c.terminal != nil:
		// A final response passed through (interrupted, no typed error).
		return recoveryResult(outcomeOf(c.terminal.Type), c.terminal.Failure, nil, "recourse: recovery "+string(outcomeOf(c.terminal.Type)))
	case c.succeeded:
		return result{outcome: outcomeSuccess}
	case c.attempts == 0 && c.status != 0:
		// No recovery ran (no events): only the response status is known.
		if c.status >= 400 {
			s := strconv.Itoa(c.status)
			return result{failed: true, errorType: s, description: "HTTP " + s}
		}
		return result{}
	case how == endEOF:
		return result{outcome: outcomeSuccess}
	}
	return result{outcome: outcomeClosed}
}

// recoveryResult is the result of a recovery outcome. f is the final
// failure, when known.
func recoveryResult(o event.Outcome, f *event.Failure, err error, desc string) result {
	r := result{outcome: string(o)}
	if o == event.OutcomeCancelled {
		if err != nil && errors.Is(err, context.DeadlineExceeded) {
			r.failed, r.errorType, r.description = true, "timeout", "recourse: context deadline exceeded"
		}
		return r
	}
	r.failed = true
	r.errorType = semconv.ErrorTypeOther.Value.AsString()
	if f != nil {
		r.errorType = errorType(f)
		r.marks = failureMarks(f)
	}
	r.description = desc
	return r
}

// outcomeOf maps a terminal event back to its outcome. exhausted
// also stands for deadline and delay_ceiling; the exact outcome comes from
// the RecoveryError when there is one.
func outcomeOf(t event.Type) event.Outcome {
	switch t {
	case event.Interrupted:
		return event.OutcomeInterrupted
	case event.Cancelled:
		return event.OutcomeCancelled
	case event.AdmissionRequired:
		return event.OutcomeAdmissionRequired
	case event.AdmissionRejected:
		return event.OutcomeAdmissionRejected
	case event.AdmissionNoDecision:
		return event.OutcomeAdmissionNoDecision
	}
	return event.OutcomeExhausted
}

// errorType is the error.type of a failure: the HTTP status for an HTTP
// failure, otherwise the failure category.
func errorType(f *event.Failure) string {
	if f.Category == event.CategoryHTTP && f.HTTPStatus != 0 {
		return strconv.Itoa(f.HTTPStatus)
	}
	if f.Category == "" {
		return semconv.ErrorTypeOther.Value.AsString()
	}
	return string(f.Category)
}

// requestModel returns the requested model. c.mu must be held.
func (c *call) requestModel() string { return c.model }

// responseAttributes are the gen_ai response attributes of a successful
// call. c.mu must be held.
func (c *call) responseAttributes() []attribute.KeyValue {
	var a []attribute.KeyValue
	ev := c.report.Result.Response
	if m := c.safeResponseModel(ev.Model); m != "" {
		a = append(a, keyResponseModel.String(m))
	}
	if fr := safeFinishReason(ev.FinishReason); fr != "" {
		a = append(a, keyFinishReasons.StringSlice([]string{fr}))
	}
	if in, out, ok := c.usage(); ok {
		a = append(a, keyInputTokens.Int(in), keyOutputTokens.Int(out))
	}
	return a
}

// usage returns the input and output tokens of a successful call, when
// known: from the call's response evidence, or else from the Ollama
// metrics event. c.mu must be held.
func (c *call) usage() (in, out int, ok bool) {
	if u := c.report.Result.Response.Usage; u != nil {
		return u.InputTokens, u.OutputTokens, true
	}
	if c.metrics != nil {
		return c.metrics.PromptEvalCount, c.metrics.EvalCount, true
	}
	return 0, 0, false
}
