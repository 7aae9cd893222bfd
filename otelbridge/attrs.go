package otelbridge

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
)

// The gen_ai.* keys (OpenTelemetry GenAI semantic conventions, development
// status). They are spelled here because the semconv package of otel
// v1.47.0 (v1.43.0) no longer carries them: they moved to the
// semantic-conventions-genai repository, which has no Go package.
const (
	keyOperationName  = attribute.Key("gen_ai.operation.name")
	keyProviderName   = attribute.Key("gen_ai.provider.name")
	keyRequestModel   = attribute.Key("gen_ai.request.model")
	keyRequestStream  = attribute.Key("gen_ai.request.stream")
	keyResponseModel  = attribute.Key("gen_ai.response.model")
	keyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	keyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	operationChat     = "chat"
	maxResponseModel  = 128
	maxBodyEchoLength = 64 << 20
)

// The recourse.* keys (project-namespaced, as the naming rules ask).
const (
	keyOutcome         = attribute.Key("recourse.outcome")
	keyAttempts        = attribute.Key("recourse.attempts")
	keyOperation       = attribute.Key("recourse.operation")
	keyLogicalID       = attribute.Key("recourse.logical_request_id")
	keyAttemptID       = attribute.Key("recourse.attempt_id")
	keyEvent           = attribute.Key("recourse.event")
	keyAttempt         = attribute.Key("recourse.attempt")
	keyNextAttempt     = attribute.Key("recourse.next_attempt")
	keyFailureCategory = attribute.Key("recourse.failure.category")
	keyFailureReason   = attribute.Key("recourse.failure.reason")
	keyFailureStall    = attribute.Key("recourse.failure.stall")
	keyFailureHint     = attribute.Key("recourse.failure.hint")
	keyDelayMS         = attribute.Key("recourse.delay_ms")
	keyQuotaUpstream   = attribute.Key("recourse.quota.upstream")
	keyQuotaResends    = attribute.Key("recourse.quota.resends")
	keyResumeCursor    = attribute.Key("recourse.resume.cursor")

	keyBreakerUpstream = attribute.Key("recourse.breaker.upstream")
	keyBreakerRefusing = attribute.Key("recourse.breaker.refusing")
	keyBreakerCooldown = attribute.Key("recourse.breaker.cooldown_until")
	keyBreakerSkipped  = attribute.Key("recourse.breaker.skipped")
	keyBreakerFailures = attribute.Key("recourse.breaker.failures")
)

// target is what the spans say about the request's destination: never the
// user information, the query or the fragment.
type target struct {
	method  string // a known method, or "_OTHER"
	url     string
	address string
	port    int
}

var knownMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY", "TRACE"}

func targetOf(req *http.Request) target {
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	if !slices.Contains(knownMethods, m) {
		m = "_OTHER"
	}
	t := target{method: m}
	u := req.URL
	if u == nil {
		return t
	}
	host := u.Host
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	t.url = (&url.URL{Scheme: u.Scheme, Host: host, Path: u.Path, RawPath: u.RawPath}).String()
	h := &url.URL{Host: host}
	t.address = h.Hostname()
	if p, err := strconv.Atoi(h.Port()); err == nil {
		t.port = p
	} else {
		switch strings.ToLower(u.Scheme) {
		case "http":
			t.port = 80
		case "https":
			t.port = 443
		}
	}
	return t
}

// spanName is the attempt span's name: the method, or "HTTP" for an
// unknown one (HTTP semantic conventions).
func (t target) spanName() string {
	if t.method == "_OTHER" {
		return "HTTP"
	}
	return t.method
}

// server returns server.address and server.port (always, also 80 and 443).
func (t target) server() []attribute.KeyValue {
	if t.address == "" {
		return nil
	}
	a := []attribute.KeyValue{semconv.ServerAddress(t.address)}
	if t.port != 0 {
		a = append(a, semconv.ServerPort(t.port))
	}
	return a
}

// attempt returns url.full and the server attributes.
func (t target) attempt() []attribute.KeyValue {
	var a []attribute.KeyValue
	if t.url != "" {
		a = append(a, semconv.URLFull(t.url))
	}
	return append(a, t.server()...)
}

// eventName is the span event name of a lifecycle event type:
// "recourse." followed by the type with its first underscore made a dot
// ("admission_no_decision" → "recourse.admission.no_decision").
func eventName(t event.Type) string {
	s := string(t)
	switch t {
	case event.AdmissionPending, event.AdmissionAllowed, event.AdmissionRejected,
		event.AdmissionNoDecision, event.AdmissionRequired, event.DelayScheduled,
		event.RetryStarted, event.QuotaRefused, event.QuotaUnavailable, event.CooldownWait:
		s = strings.Replace(s, "_", ".", 1)
	}
	return "recourse." + s
}

// eventAttributes are the safe attributes of a span event: the event type,
// attempt numbers, the failure's category, reason and status, the delay.
func eventAttributes(ev *event.Event) []attribute.KeyValue {
	a := []attribute.KeyValue{keyEvent.String(string(ev.Type)), keyAttempt.Int(ev.WireAttempt)}
	if ev.NextAttempt > 0 {
		a = append(a, keyNextAttempt.Int(ev.NextAttempt))
	}
	if f := ev.Failure; f != nil {
		a = append(a, keyFailureCategory.String(string(f.Category)), keyFailureReason.String(string(f.Classification.Reason)))
		a = append(a, failureMarks(f)...)
		if f.HTTPStatus != 0 {
			a = append(a, semconv.HTTPResponseStatusCode(f.HTTPStatus))
		}
	}
	if ev.Type == event.DelayScheduled || ev.Type == event.CooldownWait {
		a = append(a, keyDelayMS.Int64(ev.Delay.Milliseconds()))
	}
	if q := ev.Quota; q != nil {
		a = append(a, keyQuotaUpstream.String(q.Upstream), keyQuotaResends.Int(q.Resends))
	}
	if r := ev.Resume; r != nil {
		a = append(a, keyResumeCursor.Int64(r.Cursor))
	}
	if b := ev.Breaker; b != nil {
		a = append(a, keyBreakerUpstream.String(b.Upstream), keyBreakerRefusing.Bool(b.Refusing),
			keyBreakerSkipped.Int64(b.Skipped), keyBreakerFailures.Int64(b.Failures))
		if !b.CooldownUntil.IsZero() {
			a = append(a, keyBreakerCooldown.String(b.CooldownUntil.UTC().Format(time.RFC3339Nano)))
		}
	}
	return a
}

// failureMarks are the optional safe attributes of a failure: the stall
// limit that ended the attempt (recourse.failure.stall) and the provider
// hint the classification honoured (recourse.failure.hint), each only when
// set to a value of the vocabulary. Any other value (a per-attempt layer
// of the application may return a StallError of its own) is left out, so
// that the values, and the metric series they label, stay a fixed set.
func failureMarks(f *event.Failure) []attribute.KeyValue {
	if f == nil {
		return nil
	}
	var a []attribute.KeyValue
	switch f.Stall {
	case event.StallHeader, event.StallFirstOutput, event.StallIdle:
		a = append(a, keyFailureStall.String(string(f.Stall)))
	}
	switch f.Hint {
	case event.HintShouldNotRetry, event.HintInsufficientQuota:
		a = append(a, keyFailureHint.String(string(f.Hint)))
	}
	return a
}

// knownFinishReasons are the finish and done reasons the layer records;
// any other value is dropped (response evidence is sensitive).
var knownFinishReasons = []string{"stop", "length", "tool_calls", "content_filter", "function_call", "load", "unload", "error"}

func safeFinishReason(s string) string {
	if slices.Contains(knownFinishReasons, s) {
		return s
	}
	return ""
}

var modelToken = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)

// safeResponseModel returns the response model when it is safe to record:
// the requested model itself, or a short model-like token that occurs in no
// request header value and not in the request body. Without a way to read
// the body again (GetBody) only the requested model is kept. c.mu must be
// held.
func (c *call) safeResponseModel(m string) string {
	if m == "" {
		return ""
	}
	if m == c.requestModel() {
		return m
	}
	if len(m) > maxResponseModel || !modelToken.MatchString(m) || c.req.GetBody == nil {
		return ""
	}
	for _, vs := range c.req.Header {
		for _, v := range vs {
			if strings.Contains(v, m) {
				return ""
			}
		}
	}
	if u := c.req.URL; u != nil && (strings.Contains(u.RawQuery, m) || strings.Contains(u.User.String(), m)) {
		return ""
	}
	rc, err := c.req.GetBody()
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxBodyEchoLength))
	if err != nil || bytes.Contains(b, []byte(m)) {
		return ""
	}
	return m
}

// providerName returns the gen_ai.provider.name of a codec's provider: the
// well-known "gcp.gemini" for codec.Gemini (R23.6), the provider's own name
// otherwise ("openai" is the well-known value too).
func providerName(p codec.Provider) string {
	if p == codec.Gemini {
		return "gcp.gemini"
	}
	return string(p)
}
