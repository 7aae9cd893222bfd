package otelbridge

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
)

// The instrument names. The two gen_ai.* ones are the GenAI semantic
// conventions' client metrics (development status); the recourse.* ones
// measure what the conventions do not define.
const (
	metricOperationDuration = "gen_ai.client.operation.duration"
	metricTokenUsage        = "gen_ai.client.token.usage"
	metricAttempts          = "recourse.client.attempts"
	metricResends           = "recourse.client.resends"
	metricRetryDelay        = "recourse.client.retry.delay"
	metricAdmission         = "recourse.client.admission.decisions"
	metricOutcomes          = "recourse.client.outcomes"
	metricTimeToFirstOutput = "recourse.client.time_to_first_output"
)

// The metric attribute keys beside those the spans use.
const (
	keyTokenType         = attribute.Key("gen_ai.token.type")
	keyAttemptOutcome    = attribute.Key("recourse.attempt.outcome")
	keyAdmissionDecision = attribute.Key("recourse.admission.decision")
)

// The recourse.attempt.outcome values.
const (
	attemptSucceeded = "succeeded"
	attemptFailed    = "failed"
	// attemptClosed is an attempt that ended with neither
	// attempt_succeeded nor attempt_failed: the caller closed the stream
	// before its end.
	attemptClosed = "closed"
)

// The explicit bucket boundaries (see "Metrics" in the package
// documentation).
var (
	// durationBuckets are the GenAI conventions' advice for
	// gen_ai.client.operation.duration: 10 ms doubling up to 81.92 s.
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// tokenBuckets are the conventions' advice for gen_ai.client.token.usage:
	// powers of 4 from 1 to 4^13.
	tokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	// delayBuckets cover a zero delay (its own bucket), the default
	// backoff (100 ms base, 30 s ceiling) and long Retry-After values
	// under a raised ceiling.
	delayBuckets = []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300}
	// firstOutputBuckets are the conventions' advice for
	// gen_ai.server.time_to_first_token (1 ms to 10 s), extended to 80 s
	// for what a client also waits for: admission, backoff, resends.
	firstOutputBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
)

// instruments are the layer's metric instruments, created once in New.
type instruments struct {
	duration    metric.Float64Histogram
	tokens      metric.Int64Histogram
	attempts    metric.Int64Counter
	resends     metric.Int64Counter
	delay       metric.Float64Histogram
	admission   metric.Int64Counter
	outcomes    metric.Int64Counter
	firstOutput metric.Float64Histogram
}

// newInstruments creates the instruments. An error of the meter is
// reported to otel.Handle; an instrument it did not return is replaced by
// a no-op one, so that New never fails.
func newInstruments(m metric.Meter) instruments {
	return instruments{
		duration: float64Histogram(m, metricOperationDuration, "s", durationBuckets,
			"GenAI operation duration: one logical completion, its attempts, backoff and whole stream included."),
		tokens: int64Histogram(m, metricTokenUsage, "{token}", tokenBuckets,
			"Number of input and output tokens used."),
		attempts: int64Counter(m, metricAttempts, "{attempt}",
			"Wire attempts, by outcome."),
		resends: int64Counter(m, metricResends, "{resend}",
			"Resends of a logical completion (retry_started events)."),
		delay: float64Histogram(m, metricRetryDelay, "s", delayBuckets,
			"Backoff delay scheduled before a resend."),
		admission: int64Counter(m, metricAdmission, "{decision}",
			"Admission decisions about a resend."),
		outcomes: int64Counter(m, metricOutcomes, "{completion}",
			"Logical completions, by outcome."),
		firstOutput: float64Histogram(m, metricTimeToFirstOutput, "s", firstOutputBuckets,
			"Time from the start of a streamed logical completion to its first semantic output (content, reasoning or a tool-call fragment)."),
	}
}

func float64Histogram(m metric.Meter, name, unit string, bounds []float64, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
	if err != nil {
		otel.Handle(err)
	}
	if h == nil {
		return noop.Float64Histogram{}
	}
	return h
}

func int64Histogram(m metric.Meter, name, unit string, bounds []float64, desc string) metric.Int64Histogram {
	h, err := m.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
	if err != nil {
		otel.Handle(err)
	}
	if h == nil {
		return noop.Int64Histogram{}
	}
	return h
}

func int64Counter(m metric.Meter, name, unit, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		otel.Handle(err)
	}
	if c == nil {
		return noop.Int64Counter{}
	}
	return c
}

// metricAttributes are the attributes every measurement of the call
// carries: gen_ai.operation.name, gen_ai.provider.name and
// gen_ai.request.model once an event taught them, server.address and
// server.port, recourse.fallback.target on a call with fallback
// targets, and the layer's WithAttributes. No identifier of a call or attempt: cardinality stays
// bounded by the configuration. extra is appended. c.mu must be held.
func (c *call) metricAttributes(extra ...attribute.KeyValue) metric.MeasurementOption {
	a := make([]attribute.KeyValue, 0, 6+len(extra))
	a = append(a, keyOperationName.String(operationChat))
	if c.provider != "" {
		a = append(a, keyProviderName.String(providerName(c.provider)))
	}
	if c.model != "" {
		a = append(a, keyRequestModel.String(c.model))
	}
	a = append(a, c.target.server()...)
	a = c.fallbackLabel(a)
	a = append(a, c.l.extra...)
	return metric.WithAttributes(append(a, extra...)...)
}

// mctx is the context of a measurement: the logical span's, so that an
// exemplar names the logical span. c.mu must be held.
func (c *call) mctx() context.Context {
	if c.lctx != nil {
		return c.lctx
	}
	return c.parent
}

// countAttempt counts one wire attempt. status 0 and errType "" are left
// out; marks (failureMarks of the attempt's failure) are appended. c.mu
// must be held.
func (c *call) countAttempt(outcome string, status int, errType string, marks ...attribute.KeyValue) {
	extra := []attribute.KeyValue{keyAttemptOutcome.String(outcome)}
	if status != 0 {
		extra = append(extra, semconv.HTTPResponseStatusCode(status))
	}
	if errType != "" {
		extra = append(extra, semconv.ErrorTypeKey.String(errType))
	}
	c.l.inst.attempts.Add(c.mctx(), 1, c.metricAttributes(append(extra, marks...)...))
}

// failureAttributes are the failure's category, its status when a
// response arrived, and its marks (failureMarks: the stall limit and the
// provider hint, when set): the reason of a resend or a delay.
func failureAttributes(f *event.Failure) []attribute.KeyValue {
	if f == nil {
		return nil
	}
	a := []attribute.KeyValue{keyFailureCategory.String(string(f.Category))}
	if f.HTTPStatus != 0 {
		a = append(a, semconv.HTTPResponseStatusCode(f.HTTPStatus))
	}
	return append(a, failureMarks(f)...)
}

// admissionDecision is the recourse.admission.decision of an admission
// event, or "" for admission_pending and every other event.
func admissionDecision(t event.Type) string {
	switch t {
	case event.AdmissionAllowed:
		return "allowed"
	case event.AdmissionRejected:
		return "rejected"
	case event.AdmissionNoDecision:
		return "no_decision"
	case event.AdmissionRequired:
		return "required"
	}
	return ""
}

// measure records the metrics of one lifecycle event. c.mu must be held.
func (c *call) measure(ev *event.Event) {
	ctx := c.mctx()
	switch ev.Type {
	case event.RetryStarted:
		c.l.inst.resends.Add(ctx, 1, c.metricAttributes(failureAttributes(ev.Failure)...))
	case event.DelayScheduled:
		c.l.inst.delay.Record(ctx, ev.Delay.Seconds(), c.metricAttributes(failureAttributes(ev.Failure)...))
	case event.AdmissionAllowed, event.AdmissionRejected, event.AdmissionNoDecision, event.AdmissionRequired:
		c.l.inst.admission.Add(ctx, 1, c.metricAttributes(keyAdmissionDecision.String(admissionDecision(ev.Type))))
	case event.Telemetry:
		// Only telemetry events: they come as the frames go. Every other
		// event's counts are read after the fact (attempt_succeeded at
		// the end of the stream), so they would time the end, not the
		// first output.
		if semantic(ev.Progress.Observed) {
			c.firstOutput()
		}
	}
}

// semantic reports whether n counts any semantic output.
func semantic(n codec.Counts) bool {
	return n.ContentBytes > 0 || n.ReasoningBytes > 0 || n.ToolFragments > 0 || n.CompletedToolCalls > 0
}

// firstOutput records the time to first output once per call. c.mu must
// be held.
func (c *call) firstOutput() {
	if c.outputSeen {
		return
	}
	c.outputSeen = true
	c.l.inst.firstOutput.Record(c.mctx(), time.Since(c.start).Seconds(), c.metricAttributes())
}

// frameOutput is told about every frame a native stream hands over.
func (c *call) frameOutput(f *codec.Frame) {
	if f.Keepalive {
		return
	}
	if f.Content == "" && f.Reasoning == "" && len(f.Fragments) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.firstOutput()
	}
}

// measureEnd records the metrics of the call's end: its duration, its
// outcome and its token usage. c.mu must be held.
func (c *call) measureEnd(res result) {
	ctx := c.mctx()
	var errAttr []attribute.KeyValue
	if res.failed {
		errAttr = []attribute.KeyValue{semconv.ErrorTypeKey.String(res.errorType)}
	}
	c.l.inst.duration.Record(ctx, time.Since(c.start).Seconds(), c.metricAttributes(errAttr...))
	if res.outcome != "" {
		a := append([]attribute.KeyValue{keyOutcome.String(res.outcome)}, errAttr...)
		c.l.inst.outcomes.Add(ctx, 1, c.metricAttributes(append(a, res.marks...)...))
	}
	if res.outcome == outcomeSuccess {
		if in, out, ok := c.usage(); ok {
			c.l.inst.tokens.Record(ctx, int64(in), c.metricAttributes(keyTokenType.String("input")))
			c.l.inst.tokens.Record(ctx, int64(out), c.metricAttributes(keyTokenType.String("output")))
		}
	}
}
