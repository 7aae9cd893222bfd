package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/stall"
	"github.com/recourse-dev/recourse/otelbridge"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The canaries: a fake credential, a prompt, a tool argument, a header
// value, a query value and upstream text. None may appear in anything the
// proxy itself produces: its log lines (JSON, every level), its own error
// bodies and in-band error frames, its retry notices.
const (
	canaryKey    = "sk-canary-5f1d0c"
	canaryPrompt = "canary-prompt-7ab2"
	canaryTool   = "canary-tool-arg-91c3"
	canaryHeader = "canary-header-4e8d"
	canaryQuery  = "canary-query-2b6f"
	canaryText   = "canary-upstream-text-c0de"
	canaryHost   = "canary-location.invalid"
	// canaryHeldKey is the upstream key the proxy holds (R21.12).
	canaryHeldKey = "sk-canary-held-9e4a"
)

var canaries = []string{canaryKey, canaryPrompt, canaryTool, canaryHeader, canaryQuery, canaryText, canaryHost, canaryHeldKey}

// withHeldKey makes the proxy hold canaryHeldKey and admit canaryKey as a
// client key (R21.12); with refuse, canaryKey is not among the keys.
func withHeldKey(refuse bool) func(*Config) {
	return func(c *Config) {
		c.UpstreamKey = canaryHeldKey
		k := HashKey(canaryKey)
		if refuse {
			k = HashKey("another key")
		}
		c.ClientKeys = []ClientKey{{Hash: k, Name: "canary-client"}}
	}
}

const canaryBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + canaryPrompt + `"},` +
	`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":\"` + canaryTool + `\"}"}}]}]}`

const canaryStreamBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + canaryPrompt + `"}]}`

// canaryScenario is one call of TestCanaryNeverInSafeOutputs.
type canaryScenario struct {
	name  string
	edit  func(*Config)
	body  string
	path  string
	steps []recoursetest.Step
	// passed is true when the client gets the upstream's own body, which
	// is the client's data, not a safe output.
	passed bool
	// extra are request header pairs added to the canary headers.
	extra []string
	// stalls is set for a scenario whose stall limits must fire: it runs
	// on a memory rig inside a testing/synctest bubble, and its log must
	// name the limit.
	stalls string
	// bubbleSteps, when set, makes the steps inside the bubble, for a
	// step gated on a channel the bubble must own to wait on it durably.
	bubbleSteps func() []recoursetest.Step
}

func TestCanaryNeverInSafeOutputs(t *testing.T) {
	echo := recoursetest.OpenAIError("server_error", "", "echo "+canaryText+" "+canaryPrompt)
	events := recoursetest.OpenAIStream("Hel", "lo")
	for _, sc := range []canaryScenario{
		{"success", nil, canaryBody, "", []recoursetest.Step{recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))}, false, nil, "", nil},
		{"recovered", nil, canaryBody, "", []recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))}, false, nil, "", nil},
		{"exhausted", nil, canaryBody, "", []recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo)}, true, nil, "", nil},
		{"bad request", nil, canaryBody, "", []recoursetest.Step{recoursetest.JSON(400, echo)}, true, nil, "", nil},
		{"error object in a 200", nil, canaryBody, "", []recoursetest.Step{recoursetest.JSON(200, echo)}, false, nil, "", nil},
		{"redirect", nil, canaryBody, "", []recoursetest.Step{recoursetest.Redirect(307, "http://"+canaryHost+"/?k="+canaryKey)}, false, nil, "", nil},
		{"forwarded redirect", nil, "", "/v1/models?key=" + canaryQuery, []recoursetest.Step{recoursetest.Redirect(302, "http://"+canaryHost+"/")}, false, nil, "", nil},
		{"reset", nil, canaryBody, "", []recoursetest.Step{recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset()}, false, nil, "", nil},
		{"stream cut after content", nil, canaryStreamBody, "", []recoursetest.Step{recoursetest.SSE(events...).Cut(len(events[0]) + len(events[1]) + 4)}, false, nil, "", nil},
		{"stream committed then exhausted", commitNow, canaryStreamBody, "", []recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo)}, false, nil, "", nil},
		{"too large", func(c *Config) { c.MaxBodyBytes = 16 }, canaryBody, "", nil, false, nil, "", nil},
		{"header timeout on every attempt", withStall(stall.Limits{Header: time.Minute}), canaryBody, "", nil, false, nil, "header_timeout", neverAnswered},
		{"idle timeout before output, resumed with a notice", withStall(stall.Limits{Idle: time.Minute}), canaryStreamBody, "",
			[]recoursetest.Step{recoursetest.SSE(keepalive).Held(), recoursetest.SSE(events...)}, false, nil, "idle_timeout", nil},
		{"idle timeout after output", withStall(stall.Limits{Idle: 2 * time.Minute}), canaryStreamBody, "",
			[]recoursetest.Step{recoursetest.SSE(events[0], events[1]).Held()}, false, nil, "idle_timeout", nil},
		{"provider hints", func(c *Config) { c.Policy.ProviderHints = true }, canaryBody, "",
			[]recoursetest.Step{recoursetest.JSON(503, echo, "retry-after-ms", "10"), recoursetest.JSON(503, echo, "x-should-retry", "false")}, true, nil, "", nil},
		{"quota exhausted after resets", withQuota(quota.WithRatio(0), quota.WithFloor(1)), canaryBody, "",
			[]recoursetest.Step{recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset()}, false, nil, "", nil},
		{"quota exhausted after 503s", withQuota(quota.WithRatio(0), quota.WithFloor(1)), canaryBody, "",
			[]recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(503, echo)}, true, nil, "", nil},
		{"stream held by the shared cooldown, with a notice", withCooldown, canaryStreamBody, "",
			[]recoursetest.Step{recoursetest.SSE(events...)}, false, nil, "", nil},
		{"client retry refused", withQuota(quota.WithRatio(0), quota.WithFloor(0)), canaryBody, "", nil, false,
			[]string{"X-Stainless-Retry-Count", "1"}, "", nil},
		{"held key, client admitted, recovered", withHeldKey(false), canaryBody, "",
			[]recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(200, recoursetest.OpenAIChat("ok"))}, false, nil, "", nil},
		{"held key, exhausted", withHeldKey(false), canaryBody, "",
			[]recoursetest.Step{recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo), recoursetest.JSON(503, echo)}, true, nil, "", nil},
		{"held key, forwarded", withHeldKey(false), "", "/v1/models?key=" + canaryQuery, []recoursetest.Step{recoursetest.Redirect(302, "http://"+canaryHost+"/")}, false, nil, "", nil},
		{"held key, client refused", withHeldKey(true), canaryBody, "", nil, false, nil, "", nil},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if sc.stalls == "" {
				checkCanaries(t, newRig(t, "openai", sc.edit, sc.steps...), sc)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				steps := sc.steps
				if sc.bubbleSteps != nil {
					steps = sc.bubbleSteps()
				}
				checkCanaries(t, newMemoryRig(t, "openai", sc.edit, steps...), sc)
			})
		})
	}
}

// neverAnswered returns steps for every attempt of the test policy whose
// headers never come.
func neverAnswered() []recoursetest.Step {
	never := make(chan struct{})
	return rigtest.Repeat(recoursetest.JSON(200, recoursetest.OpenAIChat("never sent")).Gated(-1, never), 4)
}

// checkCanaries makes the scenario's call through r and scans everything
// the proxy produced for it.
func checkCanaries(t *testing.T, r *rig, sc canaryScenario) {
	t.Helper()
	path := sc.path
	if path == "" {
		path = "/v1/chat/completions?key=" + canaryQuery
	}
	method := http.MethodPost
	if sc.body == "" {
		method = http.MethodGet
	}
	got := r.do(t, method, path, sc.body, append([]string{"Authorization", "Bearer " + canaryKey, "X-Custom", canaryHeader}, sc.extra...)...)
	r.logged(t, `"msg":"request"`)
	logs := r.logs.String()
	if sc.stalls != "" {
		assert.Contains(t, logs, `"stall":"`+sc.stalls+`"`, "the scenario ran")
	}
	if strings.Contains(sc.name, "cooldown") {
		assert.Contains(t, got.body, ": waiting for the upstream's shared cooldown", "the scenario ran")
	}
	for _, c := range canaries {
		assert.NotContains(t, logs, c, "log")
		if !sc.passed {
			assert.NotContains(t, got.body, c, "body written by the proxy")
		}
		for k, vs := range got.header {
			assert.NotContains(t, k+": "+strings.Join(vs, ","), c, "response header")
		}
	}
}

func withStall(lim stall.Limits) func(*Config) {
	return func(c *Config) {
		l, err := stall.New(lim)
		if err != nil {
			panic(err)
		}
		c.PerAttempt = []layer.Layer{l}
	}
}

func withQuota(opts ...quota.Option) func(*Config) {
	return func(c *Config) {
		q, err := quota.New(append([]quota.Option{quota.WithStore(quota.NewMemoryStore())}, opts...)...)
		if err != nil {
			panic(err)
		}
		c.Quota = q
	}
}

// withCooldown sets a quota whose store already holds a cooldown horizon
// for the upstream, 2 s after a fixed wall clock, and commits streams at
// once, so a stream's first attempt is held with a notice.
func withCooldown(c *Config) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	store := quota.NewMemoryStore()
	// The store key of a loopback upstream, which has its port, is its URL.
	if err := store.SetHorizon(context.Background(), c.Upstream, t0.Add(2*time.Second)); err != nil {
		panic(err)
	}
	q, err := quota.New(quota.WithStore(store))
	if err != nil {
		panic(err)
	}
	c.Quota = q
	c.Policy.WallClock = func() time.Time { return t0 }
	c.StreamCommitAfter = time.Nanosecond
}

// TestTracesCarryNoCanary records the spans and metrics of canary calls
// (the OpenTelemetry SDK, as the command's exporters get them) and scans
// every byte of them.
func TestTracesCarryNoCanary(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	bridge := otelbridge.New(otelbridge.WithTracerProvider(tp), otelbridge.WithMeterProvider(mp))
	echo := recoursetest.OpenAIError("server_error", "", "echo "+canaryText+" "+canaryPrompt)
	events := recoursetest.OpenAIStream("Hel", "lo")
	r := newRig(t, "openai", func(c *Config) { c.PerCall = []layer.Layer{bridge}; c.UpstreamKey = canaryHeldKey },
		recoursetest.JSON(503, echo), recoursetest.JSON(200, recoursetest.OpenAIChat("ok")),
		recoursetest.JSON(400, echo),
		recoursetest.SSE(events...).Cut(len(events[0])+len(events[1])+4))
	for _, body := range []string{canaryBody, canaryBody, canaryBody, canaryStreamBody} {
		r.do(t, http.MethodPost, "/v1/chat/completions?key="+canaryQuery, body, "Authorization", "Bearer "+canaryKey, "X-Custom", canaryHeader)
	}
	r.logged(t, `"status":200,"outcome":"interrupted"`)
	require.NoError(t, tp.ForceFlush(context.Background()))
	spans, err := json.Marshal(exp.GetSpans()) // before Shutdown, which empties the exporter
	require.NoError(t, err)
	require.NoError(t, tp.Shutdown(context.Background()))
	var rm metricdata.ResourceMetrics
	require.NoError(t, rd.Collect(context.Background(), &rm))
	metrics, err := json.Marshal(rm)
	require.NoError(t, err)
	require.Contains(t, string(spans), `"Name":"chat gpt-4o-mini"`, "the spans were recorded")
	require.Contains(t, string(metrics), "recourse.client.attempts", "the metrics were recorded")
	for _, c := range canaries {
		assert.NotContains(t, string(spans), c)
		assert.NotContains(t, string(metrics), c)
	}
}
