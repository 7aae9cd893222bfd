package retry_test

// Fixtures of the exactness tests (exactness_test.go,
// exactness_stream_test.go). They are self-contained on purpose: every
// helper starts with "ex" and uses only the public API, rigtest and
// scripted, so that these files do not depend on the fixtures of the other
// chain_test files.

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
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

// exWait bounds every wait for something that must happen.
const exWait = 10 * time.Second

// exUsage is the usage every terminal frame of these fixtures reports.
var exUsage = chat.Usage{InputTokens: 12, OutputTokens: 7}

// exProv is one streaming provider row.
type exProv struct {
	name   string
	codec  func() codec.Codec
	model  string // the requested model
	answer string // the model the provider reports
	ndjson bool
	// content is a non-terminal frame carrying s.
	content func(s string) string
	// full is an accepted stream with content.
	full func(content ...string) []string
	// length is a stream ending with content and a length finish whose
	// frame reports the answering model and the usage.
	length func(content string) []string
}

func (p exProv) step(frames ...string) recoursetest.Step {
	if p.ndjson {
		return recoursetest.NDJSON(frames...)
	}
	return recoursetest.SSE(frames...)
}

func (p exProv) request() *chat.Request {
	return &chat.Request{Model: p.model, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

func exQuote(s string) string { return strconv.Quote(s) }

// exSSEChunk is one chat.completion.chunk event; finish "" leaves the
// finish reason null, usage "" leaves usage out.
func exSSEChunk(model, delta, finish, usage string) string {
	fr := `null`
	if finish != "" {
		fr = exQuote(finish)
	}
	u := ""
	if usage != "" {
		u = `,"usage":` + usage
	}
	return `data: {"id":"chatcmpl-ex","object":"chat.completion.chunk","created":1760054400,"model":"` + model +
		`","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]` + u + "}\n\n"
}

const exSSEUsage = `{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}`

func exSSEProv(name string, cdc func() codec.Codec, model string) exProv {
	answer := model + "-2026"
	ch := func(delta, finish, usage string) string { return exSSEChunk(answer, delta, finish, usage) }
	content := func(s string) string { return ch(`{"content":`+exQuote(s)+`}`, "", "") }
	role := ch(`{"role":"assistant","content":""}`, "", "")
	return exProv{
		name: name, codec: cdc, model: model, answer: answer, content: content,
		full: func(cs ...string) []string {
			out := []string{role}
			for _, c := range cs {
				out = append(out, content(c))
			}
			return append(out, ch(`{}`, "stop", ""), `data: {"id":"chatcmpl-ex","object":"chat.completion.chunk","created":1760054400,"model":"`+answer+
				`","choices":[],"usage":`+exSSEUsage+"}\n\n", recoursetest.StreamDone)
		},
		length: func(c string) []string {
			return []string{role, content(c), ch(`{}`, "length", exSSEUsage)}
		},
	}
}

func exOllamaLine(content, doneReason string) string {
	const at = `"created_at":"2024-01-01T00:00:00.000000Z"`
	msg := `"message":{"role":"assistant","content":` + exQuote(content) + `}`
	if doneReason == "" {
		return `{"model":"llama3.2",` + at + `,` + msg + `,"done":false}` + "\n"
	}
	return `{"model":"llama3.2",` + at + `,` + msg + `,"done":true,"done_reason":"` + doneReason +
		`","total_duration":512345678,"load_duration":12345678,"prompt_eval_count":12,"prompt_eval_duration":98765432,"eval_count":7,"eval_duration":345678901}` + "\n"
}

func exOllamaProv() exProv {
	return exProv{
		name: "ollama", codec: func() codec.Codec { return ollama.New() }, model: "llama3.2", answer: "llama3.2", ndjson: true,
		content: func(s string) string { return exOllamaLine(s, "") },
		full: func(cs ...string) []string {
			var out []string
			for _, c := range cs {
				out = append(out, exOllamaLine(c, ""))
			}
			return append(out, exOllamaLine("", "stop"))
		},
		length: func(c string) []string { return []string{exOllamaLine(c, ""), exOllamaLine("", "length")} },
	}
}

// exProviders returns the OpenAI, oMLX and Ollama rows.
func exProviders() []exProv {
	return []exProv{
		exSSEProv("openai", func() codec.Codec { return openai.New() }, "gpt-4o-mini"),
		exSSEProv("omlx", func() codec.Codec { return omlx.New() }, "qwen3-8b"),
		exOllamaProv(),
	}
}

// exAllow is an admission hook that allows every resend.
func exAllow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

// exPolicy is a policy with room for retries, an allowing hook and zero
// jitter.
func exPolicy() retry.Policy {
	return retry.Policy{MaxAttempts: 3, Admit: exAllow, Jitter: func() float64 { return 0 }}
}

// exRecorder records events and can run a callback on each, after
// recording it.
type exRecorder struct {
	rigtest.Recorder
	mu   sync.Mutex
	hook func(event.Event)
}

func (r *exRecorder) OnEvent(ev event.Event) error {
	_ = r.Recorder.OnEvent(ev)
	r.mu.Lock()
	h := r.hook
	r.mu.Unlock()
	if h != nil {
		h(ev)
	}
	return nil
}

func (r *exRecorder) setHook(h func(event.Event)) {
	r.mu.Lock()
	r.hook = h
	r.mu.Unlock()
}

// exRig returns a rig whose events go to a fresh exRecorder.
func exRig(t *testing.T, cdc codec.Codec, pol retry.Policy, steps ...recoursetest.Step) (*rigtest.Rig, *exRecorder) {
	t.Helper()
	rec := &exRecorder{}
	pol.OnEvent = rec.OnEvent
	return rigtest.New(t, cdc, pol, steps...), rec
}

// exLifecycle returns the event types without Ollama's telemetry.
func exLifecycle(types []string) []string {
	var out []string
	for _, s := range types {
		if s != string(event.Telemetry) && s != string(event.Metrics) {
			out = append(out, s)
		}
	}
	return out
}

// exRun is what a chunk stream yielded.
type exRun struct {
	chunks []chat.Chunk
	err    error
	items  int
}

func (r exRun) text() string {
	var b strings.Builder
	for _, c := range r.chunks {
		b.WriteString(c.Content)
	}
	return b.String()
}

func (r exRun) done() bool {
	for _, c := range r.chunks {
		if c.Done {
			return true
		}
	}
	return false
}

func exCollect(seq iter.Seq2[chat.Chunk, error]) exRun {
	var r exRun
	for ch, err := range seq {
		r.items++
		if err != nil {
			r.err = err
			continue
		}
		r.chunks = append(r.chunks, ch)
	}
	return r
}

// exRE returns the *layer.RecoveryError in err.
func exRE(t testing.TB, err error) *layer.RecoveryError {
	t.Helper()
	require.Error(t, err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	return re
}

// exEvidence returns the private evidence of re's final failure.
func exEvidence(t testing.TB, re *layer.RecoveryError) *event.Evidence {
	t.Helper()
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev, "the failure keeps its evidence")
	return ev
}

// exAwait waits for ch or fails the test.
func exAwait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(exWait):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
