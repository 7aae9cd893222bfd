package retry_test

// Per-provider streaming conformance (R13, with R2.2, R3.3, R5.5, R8.3 and
// R9 for streams). One table row per provider wherever the behaviour is
// shared: OpenAI (SSE), oMLX (SSE: ": keep-alive" first, no finish_reason
// key on intermediate chunks, whole tool calls) and Ollama (NDJSON: blank
// line keepalives, done:true with done_reason). Ollama and oMLX resends need
// an admission hook (R8.3), so the rows that resume use an allowing hook.
//
// Every helper of this file (and of stream_capture_test.go and
// stream_telemetry_test.go) starts with "sc" so that it never collides with
// the fixtures of the other chain_test files.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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

// scWait bounds every wait for something that must happen; "promptly" in
// R9.1 means well inside it (the hooks and sleeps under test never end by
// themselves).
const scWait = 5 * time.Second

// scProv is one provider row: its codec and how its wire frames look.
type scProv struct {
	name           string
	codec          func() codec.Codec
	model          string
	ndjson         bool
	needsAdmission bool // R8.3: an eligible failure stops with admission_required without a hook
	// keepalive is the provider's keepalive frame (R14.2).
	keepalive string
	// empty is a valid frame without semantic evidence (a role chunk, an
	// Ollama line with empty content).
	empty string
	// content, reasoning build one non-terminal frame with that delta.
	content   func(s string) string
	reasoning func(s string) string
	// tool is a frame with one tool-call fragment: OpenAI the first piece of
	// a call whose arguments are incomplete; oMLX and Ollama a whole call.
	tool string
	// full returns a complete accepted stream with content.
	full func(content ...string) []string
	// stopNoEnd returns a stream that ends with content and a stop finish
	// but without the provider's end marker ([DONE]); nil for Ollama, whose
	// done line is its end.
	stopNoEnd func(content string) []string
	// length returns frames that end with a length finish (no [DONE]).
	length func(content string) []string
	// malformed is a frame that is not valid JSON.
	malformed string
	// errBody is an error body of the provider for a non-2xx answer.
	errBody string
}

func (p scProv) step(frames ...string) recoursetest.Step {
	if p.ndjson {
		return recoursetest.NDJSON(frames...)
	}
	return recoursetest.SSE(frames...)
}

// cut returns a step that writes frames and then aborts the connection
// (the client reads every byte, then io.ErrUnexpectedEOF).
func (p scProv) cut(frames ...string) recoursetest.Step {
	st := p.step(frames...)
	n := 0
	for _, c := range st.Chunks {
		n += len(c)
	}
	return st.Cut(n)
}

func (p scProv) request() *chat.Request {
	return &chat.Request{Model: p.model, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

// body is the encoded streaming request, as a drop-in SDK would send it.
func (p scProv) body(t testing.TB) []byte {
	t.Helper()
	r := p.request()
	r.Stream = true
	b, err := p.codec().Encode(r)
	require.NoError(t, err)
	return b
}

// sseChunk builds one chat.completion.chunk event. finish "" is an explicit
// null when null is set (OpenAI) and an absent key otherwise (oMLX).
func sseChunk(id, model, delta, finish string, null bool) string {
	fr := ""
	switch {
	case finish != "":
		fr = `,"finish_reason":"` + finish + `"`
	case null:
		fr = `,"finish_reason":null`
	}
	return `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1760054400,"model":"` + model +
		`","choices":[{"index":0,"delta":` + delta + fr + `}]}` + "\n\n"
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

const (
	scOllamaAt      = `"created_at":"2024-01-01T00:00:00.000000Z"`
	scOllamaMetrics = `"total_duration":512345678,"load_duration":12345678,"prompt_eval_count":12,"prompt_eval_duration":98765432,"eval_count":7,"eval_duration":345678901`
)

func ollamaLine(message string, done string) string {
	if done == "" {
		return `{"model":"llama3.2",` + scOllamaAt + `,"message":` + message + `,"done":false}` + "\n"
	}
	return `{"model":"llama3.2",` + scOllamaAt + `,"message":` + message + `,"done":true,"done_reason":"` + done + `",` + scOllamaMetrics + `}` + "\n"
}

func sseProv(name string, cdc func() codec.Codec, model string, null bool, keepalive string) scProv {
	id := "chatcmpl-" + name
	ch := func(delta, finish string) string { return sseChunk(id, model, delta, finish, null) }
	usage := `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1760054400,"model":"` + model +
		`","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}` + "\n\n"
	role := ch(`{"role":"assistant","content":""}`, "")
	p := scProv{
		name: name, codec: cdc, model: model, keepalive: keepalive, empty: role,
		content:   func(s string) string { return ch(`{"content":`+jsonString(s)+`}`, "") },
		reasoning: func(s string) string { return ch(`{"reasoning_content":`+jsonString(s)+`}`, "") },
		malformed: "data: {not json\n\n",
	}
	if null {
		p.tool = ch(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "")
		p.errBody = recoursetest.OpenAIError("rate_limit_exceeded", "rate_limit_exceeded", "slow down")
	} else {
		p.tool = ch(`{"tool_calls":[{"index":0,"id":"call_abcdef12","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]}`, "")
		p.errBody = `{"error":{"message":"busy","type":"rate_limit_error","param":null,"code":null}}`
	}
	p.full = func(content ...string) []string {
		var out []string
		if !null {
			out = append(out, keepalive) // oMLX sends ": keep-alive" before any data
		}
		out = append(out, role)
		for _, c := range content {
			out = append(out, p.content(c))
		}
		return append(out, ch(`{}`, "stop"), usage, recoursetest.StreamDone)
	}
	p.stopNoEnd = func(content string) []string {
		return []string{role, p.content(content), ch(`{}`, "stop")}
	}
	p.length = func(content string) []string {
		return []string{role, p.content(content), ch(`{}`, "length")}
	}
	return p
}

// scProviders returns the three provider rows.
func scProviders() []scProv {
	oa := sseProv("openai", func() codec.Codec { return openai.New() }, "gpt-4o-mini", true, ": keep-alive\n\n")
	om := sseProv("omlx", func() codec.Codec { return omlx.New() }, "qwen3-8b", false, ": keep-alive\n\n")
	om.needsAdmission = true
	msg := func(fields string) string { return `{"role":"assistant"` + fields + `}` }
	ol := scProv{
		name: "ollama", codec: func() codec.Codec { return ollama.New() }, model: "llama3.2", ndjson: true, needsAdmission: true,
		keepalive: "\n",
		empty:     ollamaLine(msg(`,"content":""`), ""),
		content:   func(s string) string { return ollamaLine(msg(`,"content":`+jsonString(s)), "") },
		reasoning: func(s string) string { return ollamaLine(msg(`,"content":"","thinking":`+jsonString(s)), "") },
		tool:      ollamaLine(msg(`,"content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]`), ""),
		full:      recoursetest.OllamaStream,
		length: func(content string) []string {
			return []string{ollamaLine(msg(`,"content":`+jsonString(content)), ""), ollamaLine(msg(`,"content":""`), "length")}
		},
		malformed: "{not json\n",
		errBody:   `{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
	}
	return []scProv{oa, om, ol}
}

// scRun ranges over a chunk stream and records what it yields.
type scRun struct {
	chunks []chat.Chunk
	err    error
	items  int
}

func (r scRun) text() string {
	var b strings.Builder
	for _, c := range r.chunks {
		b.WriteString(c.Content)
	}
	return b.String()
}

func (r scRun) dones() []chat.Chunk {
	var out []chat.Chunk
	for _, c := range r.chunks {
		if c.Done {
			out = append(out, c)
		}
	}
	return out
}

func scCollect(seq iter.Seq2[chat.Chunk, error]) scRun {
	var r scRun
	for ch, err := range seq {
		r.items++
		if err != nil {
			r.err = err
			continue // an error must be the last item: keep counting
		}
		r.chunks = append(r.chunks, ch)
	}
	return r
}

// scCollectAsync ranges in a goroutine; the result arrives on the channel.
func scCollectAsync(seq iter.Seq2[chat.Chunk, error]) <-chan scRun {
	out := make(chan scRun, 1)
	go func() { out <- scCollect(seq) }()
	return out
}

func scAwait(t testing.TB, ch <-chan scRun, what string) scRun {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(scWait):
		t.Fatalf("%s: the stream did not end promptly", what)
		return scRun{}
	}
}

func scAwaitSignal(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(scWait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func scAwaitLeft(t testing.TB, s *recoursetest.Server, what string) {
	t.Helper()
	select {
	case <-s.Left():
	case <-time.After(scWait):
		t.Fatalf("%s: the server never saw the request close", what)
	}
}

// scRE returns the *layer.RecoveryError in err.
func scRE(t testing.TB, err error) *layer.RecoveryError {
	t.Helper()
	require.Error(t, err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	return re
}

// scLifecycle returns the event types without the Ollama telemetry events.
func scLifecycle(types []string) []string {
	var out []string
	for _, s := range types {
		if s != string(event.Telemetry) && s != string(event.Metrics) {
			out = append(out, s)
		}
	}
	return out
}

func scCount(types []string, typ event.Type) int {
	n := 0
	for _, s := range types {
		if s == string(typ) {
			n++
		}
	}
	return n
}

func scAllow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

// scPolicy returns a policy with room for retries and, when allow is set,
// an allowing admission hook.
func scPolicy(allow bool) retry.Policy {
	p := retry.Policy{MaxAttempts: 3}
	if allow {
		p.Admit = scAllow
	}
	return p
}

// resumedTypes is the lifecycle of a keepalive-only failure resumed after an
// allowing hook (R11.3 for streams).
var resumedTypes = []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
	"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}

func TestR13_1_StreamConformance_KeepaliveThenResetResumes(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			full := p.full("Hel", "lo")
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.keepalive), p.step(full...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text(), "content exactly once")
			require.Len(t, run.dones(), 1, "one consumer stream with one Done chunk")
			assert.True(t, run.chunks[len(run.chunks)-1].Done, "Done is the last chunk")
			assert.Equal(t, "stop", run.dones()[0].Completion.FinishReason)
			assert.Equal(t, "Hello", run.dones()[0].Completion.Message.Content)
			assert.Equal(t, 2, r.Server.Count(), "two POSTs")
			reqs := r.Server.Requests()
			assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.3: byte-identical resend")
			assert.Equal(t, resumedTypes, scLifecycle(r.Rec.Types()))
			f := scFirstFailed(t, r.Rec.Events())
			assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
			assert.Equal(t, event.CategoryTransport, f.Category)
			assert.Equal(t, codec.Streaming, f.Operation)
			assert.Equal(t, event.AcceptanceYes, f.Acceptance)
			assert.Equal(t, int64(len(p.keepalive)), f.Progress.RawBytes)
			assert.False(t, f.Progress.Observed.Any(), "a keepalive is no semantic evidence")
		})
	}
}

// TestR14_2_StreamKeepaliveFormsResume: every keepalive form of R14.2 is no
// semantic evidence, so a cut after it is resumed (with an allowing hook).
func TestR14_2_StreamKeepaliveFormsResume(t *testing.T) {
	ps := scProviders()
	rows := []struct {
		p         scProv
		name      string
		keepalive string
	}{
		{ps[0], "sse_comment", ": keep-alive\n\n"},
		{ps[0], "openrouter_comment", ": OPENROUTER PROCESSING\n\n"},
		{ps[1], "sse_comment", ": keep-alive\n\n"},
		{ps[1], "model_keepalive_chunk", `data: {"model":"keepalive"}` + "\n\n"},
		{ps[2], "blank_line", "\n"},
		{ps[2], "spaces_line", "   \n"},
		{ps[2], "crlf_line", "\r\n"},
	}
	for _, rw := range rows {
		t.Run(rw.p.name+"/"+rw.name, func(t *testing.T) {
			p := rw.p
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(rw.keepalive, rw.keepalive), p.step(p.full("Hel", "lo")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			assert.Equal(t, 2, r.Server.Count())
			f := scFirstFailed(t, r.Rec.Events())
			assert.True(t, f.Classification.Eligible)
			assert.False(t, f.Progress.Observed.Any())
			assert.Equal(t, int64(2*len(rw.keepalive)), f.Progress.RawBytes)
			if p.ndjson {
				assert.Zero(t, scCount(r.Rec.Types()[:2], event.Telemetry), "a keepalive line is no frame")
			}
		})
	}
}

func TestR8_3_StreamKeepaliveThenResetWithoutHook(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(false), p.cut(p.keepalive), p.step(p.full("Hel", "lo")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			if !p.needsAdmission {
				require.NoError(t, run.err, "R8.3: an eligible OpenAI failure may retry without a hook")
				assert.Equal(t, "Hello", run.text())
				assert.Equal(t, 2, r.Server.Count())
				return
			}
			re := scRE(t, run.err)
			assert.Equal(t, event.OutcomeAdmissionRequired, re.Outcome, "R8.3")
			assert.True(t, re.Failure.Classification.Eligible)
			assert.Equal(t, 1, r.Server.Count(), "no resend without admission")
			assert.Equal(t, 1, run.items, "the error is the only item")
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_required"}, scLifecycle(r.Rec.Types()))
			assert.Len(t, re.History, 1)
		})
	}
}

// TestR13_1_StreamSemanticThenResetIsInterrupted: content, reasoning or a
// tool fragment, each then a reset, end the stream as interrupted with
// reason semantic_output after one POST — even when the evidence was never
// delivered (the plain Stream delivers neither reasoning nor fragments).
func TestR13_1_StreamSemanticThenResetIsInterrupted(t *testing.T) {
	for _, p := range scProviders() {
		kinds := []struct {
			name  string
			frame string
			want  codec.Counts
		}{
			{"content", p.content("Hel"), codec.Counts{ContentBytes: 3}},
			{"reasoning", p.reasoning("hmm"), codec.Counts{ReasoningBytes: 3}},
			{"tool_fragment", p.tool, codec.Counts{ToolFragments: 1}},
		}
		for _, k := range kinds {
			for _, opts := range []struct {
				name string
				opts []client.StreamOption
			}{{"plain", nil}, {"all_options", []client.StreamOption{client.WithReasoning(), client.WithToolFragments()}}} {
				t.Run(p.name+"/"+k.name+"/"+opts.name, func(t *testing.T) {
					r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.empty, k.frame), p.step(p.full("x")...))
					run := scCollect(r.Client.Stream(context.Background(), p.request(), opts.opts...))
					re := scRE(t, run.err)
					assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
					assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
					assert.False(t, re.Failure.Classification.Eligible)
					assert.Equal(t, event.CategoryTransport, re.Failure.Category)
					assert.Equal(t, 1, r.Server.Count(), "one POST")
					assert.Equal(t, k.want, re.Failure.Progress.Observed)
					assert.Empty(t, run.dones(), "no Done chunk: nothing completed")
					assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, scLifecycle(r.Rec.Types()))
					require.Len(t, re.History, 1)
					assert.Equal(t, re.History[0], re.Failure, "R10.4: the final failure is the last history entry")
					for _, c := range run.chunks {
						for _, fr := range c.ToolCallFragments {
							assert.Equal(t, "get_weather", fr.Name)
						}
					}
					if k.name == "tool_fragment" {
						assert.Zero(t, re.Failure.Progress.Observed.CompletedToolCalls, "R13.4: a partial call never completes")
						assert.Zero(t, re.Failure.Progress.Delivered.CompletedToolCalls)
						if opts.opts != nil {
							require.Len(t, run.chunks, 1, "the fragment is delivered as a fragment")
							assert.Len(t, run.chunks[0].ToolCallFragments, 1)
						}
					}
				})
			}
		}
	}
}

func TestR13_1_StreamEventsSemanticThenResetIsInterrupted(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.content("Hel")), p.step(p.full("x")...))
			var got []client.StreamEvent
			for e := range r.Client.StreamEvents(context.Background(), p.request()) {
				got = append(got, e)
			}
			require.Len(t, got, 2)
			assert.Equal(t, client.StreamEvent{Type: client.EventContent, Text: "Hel"}, got[0])
			last := got[1]
			require.Equal(t, client.EventError, last.Type)
			assert.Equal(t, layer.StreamInterrupted, last.Err.Reason, "R13.1: reason interrupted_stream")
			re := scRE(t, last.Err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// TestR14_2_StreamDecodedNotPatternMatched: an escaped key, a
// whitespace-prefixed data line and a legacy function_call delta are
// semantic evidence, so a cut after them interrupts (R4.4, R13.1).
func TestR14_2_StreamDecodedNotPatternMatched(t *testing.T) {
	type row struct {
		prov  string
		name  string
		frame string
		want  codec.Counts
		text  string
	}
	ps := scProviders()
	oa, om, ol := ps[0], ps[1], ps[2]
	var rows []row
	for _, p := range []scProv{oa, om} {
		id := "chatcmpl-" + p.name
		null := p.name == "openai"
		rows = append(rows,
			row{p.name, "escaped_content_key", sseChunk(id, p.model, `{"con\u0074ent":"éé"}`, "", null), codec.Counts{ContentBytes: 4}, "éé"},
			row{p.name, "escaped_reasoning_key", sseChunk(id, p.model, `{"reasoning\u005fcontent":"why"}`, "", null), codec.Counts{ReasoningBytes: 3}, ""},
			row{p.name, "whitespace_prefixed_data", "  " + p.content("Hi"), codec.Counts{ContentBytes: 2}, "Hi"},
			row{p.name, "tab_prefixed_data", "\t" + p.content("Hi"), codec.Counts{ContentBytes: 2}, "Hi"},
			row{p.name, "legacy_function_call", sseChunk(id, p.model, `{"function_call":{"name":"get_weather","arguments":"{\"ci"}}`, "", null), codec.Counts{ToolFragments: 1}, ""},
		)
	}
	rows = append(rows,
		row{ol.name, "escaped_content_key", ollamaLine(`{"role":"assistant","con\u0074ent":"éé"}`, ""), codec.Counts{ContentBytes: 4}, "éé"},
		row{ol.name, "escaped_thinking_key", ollamaLine(`{"role":"assistant","content":"","thin\u006bing":"why"}`, ""), codec.Counts{ReasoningBytes: 3}, ""},
		row{ol.name, "whitespace_prefixed_line", "  " + ol.content("Hi"), codec.Counts{ContentBytes: 2}, "Hi"},
	)
	byName := map[string]scProv{oa.name: oa, om.name: om, ol.name: ol}
	for _, rw := range rows {
		t.Run(rw.prov+"/"+rw.name, func(t *testing.T) {
			p := byName[rw.prov]
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.keepalive, rw.frame), p.step(p.full("x")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			re := scRE(t, run.err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
			assert.Equal(t, rw.want, re.Failure.Progress.Observed)
			assert.Equal(t, rw.text, run.text(), "the decoded content is delivered")
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// TestR4_5_StreamMalformedFrameIsInterrupted: a malformed frame before any
// semantic output ends the stream as interrupted, reason malformed, after
// one POST; the server holds the connection open after the bad frame, so the
// verdict comes from the frame, not from EOF. For Ollama the malformed line
// produces no telemetry (R13.6).
func TestR4_5_StreamMalformedFrameIsInterrupted(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.keepalive, p.empty, p.malformed, p.content("late")).Held(), p.step(p.full("x")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			re := scRE(t, run.err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonMalformed, re.Failure.Classification.Reason)
			assert.Equal(t, event.CategoryProtocol, re.Failure.Category)
			assert.False(t, re.Failure.Progress.Observed.Any())
			assert.Equal(t, 1, r.Server.Count(), "one POST")
			assert.Empty(t, run.chunks)
			var pe *codec.ProtocolError
			assert.ErrorAs(t, event.Inspect(&re.Failure).Cause, &pe)
			types := r.Rec.Types()
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, scLifecycle(types))
			if p.ndjson {
				// One valid frame (index 1) before the malformed line, and
				// nothing for the malformed line itself.
				var idx []int
				for _, e := range r.Rec.Events() {
					if e.Type == event.Telemetry {
						idx = append(idx, e.Frame)
					}
				}
				assert.Equal(t, []int{1}, idx, "R13.6: progress for the valid frame only")
				assert.Zero(t, scCount(types, event.Metrics))
			} else {
				assert.Zero(t, scCount(types, event.Telemetry)+scCount(types, event.Metrics), "R13.6: SSE providers emit no telemetry")
			}
		})
	}
}

// TestR13_3_StreamLengthFinish: a length finish is terminal without [DONE]
// (the server holds the connection open), never retried, and its evidence
// keeps finishReason "length"; a tool call in that response never surfaces
// as a completed call (R13.4).
func TestR13_3_StreamLengthFinish(t *testing.T) {
	for _, p := range scProviders() {
		for _, withTool := range []bool{false, true} {
			name := p.name
			if withTool {
				name += "/with_tool_call"
			}
			t.Run(name, func(t *testing.T) {
				frames := p.length("abc")
				if withTool {
					frames = append([]string{p.tool}, frames...)
				}
				r := rigtest.New(t, p.codec(), scPolicy(true), p.step(frames...).Held(), p.step(p.full("x")...))
				run := scCollect(r.Client.Stream(context.Background(), p.request(), client.WithToolFragments()))
				re := scRE(t, run.err)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				assert.False(t, re.Failure.Classification.Eligible, "never retried")
				assert.Equal(t, 1, r.Server.Count(), "one POST")
				ev := event.Inspect(&re.Failure)
				require.NotNil(t, ev)
				var se *layer.StreamError
				require.ErrorAs(t, ev.Cause, &se)
				assert.Equal(t, layer.StreamIncompleteCompletion, se.Reason)
				assert.Equal(t, "length", se.FinishReason)
				assert.Equal(t, "length", ev.Response.FinishReason)
				assert.Empty(t, run.dones(), "a length finish is no accepted completion")
				assert.Zero(t, re.Failure.Progress.Observed.CompletedToolCalls, "its tool call never completes")
				assert.Zero(t, re.Failure.Progress.Delivered.CompletedToolCalls)
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, scLifecycle(r.Rec.Types()))
			})
		}
		t.Run(p.name+"/event_api", func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.length("abc")...).Held())
			var last client.StreamEvent
			for e := range r.Client.StreamEvents(context.Background(), p.request()) {
				last = e
			}
			require.Equal(t, client.EventError, last.Type)
			assert.Equal(t, "length", last.Err.FinishReason, "the event API keeps the finish reason")
			scRE(t, last.Err)
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// TestR13_3_StreamEOFWithoutTerminalIsIncomplete: a clean HTTP EOF before
// the terminal frame is an incomplete stream (category transport): after
// content it is interrupted; after keepalives only it stays eligible and is
// resumed.
func TestR13_3_StreamEOFWithoutTerminalIsIncomplete(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name+"/after_content", func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.keepalive, p.content("Hel")), p.step(p.full("x")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			re := scRE(t, run.err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.CategoryTransport, re.Failure.Category)
			assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
			assert.Equal(t, "Hel", run.text())
			assert.Equal(t, 1, r.Server.Count())
			cause := event.Inspect(&re.Failure).Cause
			require.Error(t, cause)
			assert.NotErrorIs(t, cause, io.ErrUnexpectedEOF, "a clean EOF is reported by the decoder, not as a cut")
			if p.ndjson {
				assert.ErrorIs(t, cause, ollama.ErrIncompleteStream)
			}
		})
		if p.stopNoEnd != nil {
			t.Run(p.name+"/stop_without_DONE", func(t *testing.T) {
				r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.stopNoEnd("Hel")...), p.step(p.full("x")...))
				run := scCollect(r.Client.Stream(context.Background(), p.request()))
				re := scRE(t, run.err)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				assert.Equal(t, event.CategoryTransport, re.Failure.Category)
				assert.Empty(t, run.dones(), "R13.3: a stop finish needs [DONE]")
				assert.Equal(t, 1, r.Server.Count())
			})
		}
		t.Run(p.name+"/keepalive_only", func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.keepalive, p.keepalive), p.step(p.full("Hel", "lo")...))
			run := scCollect(r.Client.Stream(context.Background(), p.request()))
			require.NoError(t, run.err)
			assert.Equal(t, "Hello", run.text())
			assert.Equal(t, 2, r.Server.Count())
			f := scFirstFailed(t, r.Rec.Events())
			assert.Equal(t, event.CategoryTransport, f.Category)
			assert.True(t, f.Classification.Eligible, "R4.8: keepalive-only failures stay eligible")
			assert.Equal(t, resumedTypes, scLifecycle(r.Rec.Types()))
		})
	}
}

// scRecorder is a rigtest.Recorder whose OnEvent can also run a callback.
type scRecorder struct {
	*rigtest.Recorder
	mu   sync.Mutex
	hook func(event.Event)
}

func (r *scRecorder) OnEvent(ev event.Event) error {
	_ = r.Recorder.OnEvent(ev)
	r.mu.Lock()
	h := r.hook
	r.mu.Unlock()
	if h != nil {
		h(ev)
	}
	return nil
}

// scSignal returns a channel closed the first time typ is observed.
func scSignal(rec *scRecorder, typ event.Type) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	rec.mu.Lock()
	rec.hook = func(ev event.Event) {
		if ev.Type == typ {
			once.Do(func() { close(ch) })
		}
	}
	rec.mu.Unlock()
	return ch
}

func scRig(t *testing.T, p scProv, pol retry.Policy, steps ...recoursetest.Step) (*rigtest.Rig, *scRecorder) {
	rec := &scRecorder{Recorder: &rigtest.Recorder{}}
	pol.OnEvent = rec.OnEvent
	return rigtest.New(t, p.codec(), pol, steps...), rec
}

func scAssertCancelled(t *testing.T, run scRun) *layer.RecoveryError {
	t.Helper()
	re := scRE(t, run.err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.ErrorIs(t, run.err, context.Canceled)
	assert.Equal(t, event.CategoryCancellation, re.Failure.Category)
	assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
	return re
}

// TestR9_StreamCancellation covers cancellation before headers, from an
// event observer, during admission and during backoff (R9.1, R9.2).
func TestR9_StreamCancellation(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name+"/before_headers", func(t *testing.T) {
			gate := make(chan struct{}) // never released: no status, no headers
			r, rec := scRig(t, p, scPolicy(true), p.step(p.full("x")...).Gated(-1, gate).Held())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := scSignal(rec, event.AttemptStarted)
			done := scCollectAsync(r.Client.Stream(ctx, p.request()))
			scAwaitSignal(t, started, "attempt_started")
			require.Eventually(t, func() bool { return r.Server.Count() == 1 }, scWait, time.Millisecond, "the request reaches the server")
			cancel()
			run := scAwait(t, done, "cancel before headers")
			re := scAssertCancelled(t, run)
			assert.Equal(t, 1, re.Failure.WireAttempt)
			assert.False(t, re.Failure.Progress.HeadersReceived)
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, rec.Types(), "R9.2")
			scAwaitLeft(t, r.Server, "cancel before headers")
			assert.Equal(t, 1, r.Server.Count())
		})
		t.Run(p.name+"/from_observer_on_attempt_started", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, rec := scRig(t, p, scPolicy(true), p.step(p.full("Hel", "lo")...))
			rec.hook = func(ev event.Event) {
				if ev.Type == event.AttemptStarted {
					cancel()
				}
			}
			run := scAwait(t, scCollectAsync(r.Client.Stream(ctx, p.request())), "cancel from observer")
			scAssertCancelled(t, run)
			assert.Empty(t, run.chunks)
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, rec.Types())
			assert.LessOrEqual(t, r.Server.Count(), 1, "no resend")
		})
		t.Run(p.name+"/during_admission", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			entered := make(chan struct{})
			hookDone := make(chan error, 1)
			pol := scPolicy(false)
			pol.Admit = func(hctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
				close(entered)
				<-hctx.Done() // never decides by itself
				hookDone <- hctx.Err()
				return "", hctx.Err()
			}
			r, rec := scRig(t, p, pol, p.cut(p.keepalive), p.step(p.full("x")...))
			done := scCollectAsync(r.Client.Stream(ctx, p.request()))
			scAwaitSignal(t, entered, "the admission hook")
			cancel()
			run := scAwait(t, done, "cancel during admission")
			re := scAssertCancelled(t, run)
			select {
			case err := <-hookDone:
				assert.Error(t, err, "R8.2: the hook's context is cancelled")
			case <-time.After(scWait):
				t.Fatal("the hook's context was never cancelled")
			}
			assert.Equal(t, 1, r.Server.Count(), "R8.2: a pending hook never permits a resend")
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "cancelled"}, scLifecycle(rec.Types()))
			assert.Equal(t, 1, scCount(rec.Types(), event.Cancelled))
			assert.Len(t, re.History, 1)
		})
		t.Run(p.name+"/during_backoff", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, rec := scRig(t, p, scPolicy(true), p.cut(p.keepalive), p.step(p.full("x")...))
			r.Clock.Block = true // the backoff sleep never ends by itself
			scheduled := scSignal(rec, event.DelayScheduled)
			done := scCollectAsync(r.Client.Stream(ctx, p.request()))
			scAwaitSignal(t, scheduled, "delay_scheduled")
			cancel()
			run := scAwait(t, done, "cancel during backoff")
			scAssertCancelled(t, run)
			assert.Equal(t, 1, r.Server.Count())
			// The cancel may land before the sleep starts (then Sleep returns
			// at once without recording) or during it: at most one sleep.
			assert.LessOrEqual(t, len(r.Clock.Sleeps()), 1)
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed", "delay_scheduled", "cancelled"},
				scLifecycle(rec.Types()))
		})
	}
}

// TestR13_5_StreamCancelWhilePaused: the consumer holds the iterator and
// does not pull; cancelling closes the local request at once (the server
// sees it leave), the next pull yields the cancelled RecoveryError — not the
// content queued behind the first chunk — and exactly one cancelled event is
// emitted.
func TestR13_5_StreamCancelWhilePaused(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			r, rec := scRig(t, p, scPolicy(true), p.step(p.keepalive, p.content("Hi"), p.content("there")).Held())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			next, stop := iter.Pull2(r.Client.Stream(ctx, p.request()))
			defer stop()
			ch, err, ok := next()
			require.True(t, ok)
			require.NoError(t, err)
			assert.Equal(t, "Hi", ch.Content)
			cancel() // paused: nobody pulls
			scAwaitLeft(t, r.Server, "R13.5 paused consumer")
			_, err, ok = next()
			require.True(t, ok)
			re := scRE(t, err)
			assert.Equal(t, event.OutcomeCancelled, re.Outcome, "abort wins over queued content")
			_, _, ok = next()
			assert.False(t, ok, "the error is the last item")
			types := rec.Types()
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, scLifecycle(types))
			assert.Equal(t, 1, scCount(types, event.Cancelled))
			assert.Equal(t, int64(2), re.Failure.Progress.Delivered.ContentBytes, "only \"Hi\" was delivered")
			require.Len(t, re.History, 1, "R9.2: the attempt is recorded")
			assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
			if p.ndjson {
				assert.Equal(t, 1, scCount(types, event.Telemetry), "no telemetry for the frame queued behind the abort")
			}
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// TestR13_5_StreamConsumerStopsWhilePaused: a consumer that stops (breaks
// out of range, stops a pulled iterator, or breaks out of the event API)
// closes the request — the server sees the connection close — and leaves no
// goroutine behind. Nothing is resent.
func TestR13_5_StreamConsumerStopsWhilePaused(t *testing.T) {
	type stopper struct {
		name string
		stop func(t *testing.T, c *client.Client, p scProv)
	}
	stoppers := []stopper{
		{"range_break", func(t *testing.T, c *client.Client, p scProv) {
			for ch, err := range c.Stream(context.Background(), p.request()) {
				require.NoError(t, err)
				assert.Equal(t, "Hi", ch.Content)
				break
			}
		}},
		{"pull_stop", func(t *testing.T, c *client.Client, p scProv) {
			next, stop := iter.Pull2(c.Stream(context.Background(), p.request()))
			ch, err, ok := next()
			require.True(t, ok)
			require.NoError(t, err)
			assert.Equal(t, "Hi", ch.Content)
			stop()
		}},
		{"events_break", func(t *testing.T, c *client.Client, p scProv) {
			for e := range c.StreamEvents(context.Background(), p.request()) {
				assert.Equal(t, client.StreamEvent{Type: client.EventContent, Text: "Hi"}, e)
				break
			}
		}},
	}
	for _, p := range scProviders() {
		for _, s := range stoppers {
			t.Run(p.name+"/"+s.name, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				r, rec := scRig(t, p, scPolicy(true), p.step(p.keepalive, p.content("Hi"), p.content("there")).Held())
				s.stop(t, r.Client, p)
				scAwaitLeft(t, r.Server, "consumer stop")
				types := rec.Types()
				assert.Equal(t, 1, r.Server.Count(), "nothing is resent")
				assert.Zero(t, scCount(types, event.RetryStarted))
				assert.Zero(t, scCount(types, event.AttemptSucceeded), "no completion is reported for an abandoned stream")
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, scLifecycle(types), "R13.5: the stop ends the lifecycle")
				r.Close()
				goleak.VerifyNone(t, ignore)
			})
		}
	}
}

// TestR5_5_StreamRetryAfterIsAMinimum: a streaming 429 with Retry-After
// (seconds or an HTTP date) sleeps max(jittered delay, minimum).
func TestR5_5_StreamRetryAfterIsAMinimum(t *testing.T) {
	date := rigtest.Epoch.Add(5 * time.Second).Format(http.TimeFormat)
	cases := []struct {
		name   string
		value  string
		base   time.Duration
		jitter float64
		kind   event.RetryAfterKind
		want   time.Duration
	}{
		{"seconds_above_jitter", "3", time.Second, 0.5, event.RetryAfterSeconds, 3 * time.Second},
		{"seconds_below_jitter", "3", 8 * time.Second, 1, event.RetryAfterSeconds, 8 * time.Second},
		{"date_above_jitter", date, time.Second, 0.5, event.RetryAfterDate, 5 * time.Second},
		{"date_below_jitter", date, 8 * time.Second, 1, event.RetryAfterDate, 8 * time.Second},
	}
	for _, p := range scProviders() {
		for _, c := range cases {
			t.Run(p.name+"/"+c.name, func(t *testing.T) {
				pol := scPolicy(true)
				pol.MaxAttempts = 2
				pol.BaseDelay = new(c.base)
				pol.Jitter = func() float64 { return c.jitter }
				r, rec := scRig(t, p, pol, recoursetest.JSON(429, p.errBody, "Retry-After", c.value), p.step(p.full("Hel", "lo")...))
				run := scCollect(r.Client.Stream(context.Background(), p.request()))
				require.NoError(t, run.err)
				assert.Equal(t, "Hello", run.text())
				assert.Equal(t, []time.Duration{c.want}, r.Clock.Sleeps())
				f := scFirstFailed(t, rec.Events())
				assert.Equal(t, 429, f.HTTPStatus)
				assert.Equal(t, event.CategoryHTTP, f.Category)
				assert.Equal(t, c.kind, f.RetryAfter.Kind)
				ds := scEventsOf(rec.Events(), event.DelayScheduled)
				require.Len(t, ds, 1)
				assert.Equal(t, c.want, ds[0].Delay)
				assert.Equal(t, 2, r.Server.Count())
			})
		}
	}
}

// TestR2_2_StreamRedirectAnd421AreHTTPFailures: a 307 on a streaming request
// is a failure (category http, status kept) whose Location is never
// contacted; a 421 is an ordinary HTTP failure, not retried by default.
func TestR2_2_StreamRedirectAnd421AreHTTPFailures(t *testing.T) {
	for _, p := range scProviders() {
		for _, status := range []int{307, 421} {
			t.Run(p.name+"/"+http.StatusText(status), func(t *testing.T) {
				target := recoursetest.NewTarget()
				t.Cleanup(target.Close)
				var first recoursetest.Step
				if status == 307 {
					first = recoursetest.Redirect(307, target.URL+p.codec().Path())
				} else {
					first = recoursetest.JSON(421, p.errBody)
				}
				r, rec := scRig(t, p, scPolicy(true), first, p.step(p.full("x")...))
				run := scCollect(r.Client.Stream(context.Background(), p.request()))
				re := scRE(t, run.err)
				assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
				assert.Equal(t, status, re.Failure.HTTPStatus)
				assert.False(t, re.Failure.Classification.Eligible)
				assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
				assert.Equal(t, 1, r.Server.Count(), "one POST")
				assert.Zero(t, target.Hits(), "the Location is never contacted")
				assert.Equal(t, 1, run.items)
				assert.Equal(t, []string{"attempt_started", "attempt_failed", string(re.Outcome.TerminalEvent())}, rec.Types())

				// The event API reports it as a failed request, not an
				// interrupted stream (nothing was accepted).
				r2 := rigtest.New(t, p.codec(), scPolicy(true), first)
				var last client.StreamEvent
				for e := range r2.Client.StreamEvents(context.Background(), p.request()) {
					last = e
				}
				require.Equal(t, client.EventError, last.Type)
				assert.Equal(t, layer.StreamRequestFailed, last.Err.Reason)
				assert.Equal(t, status, scRE(t, last.Err).Failure.HTTPStatus)
				assert.Zero(t, target.Hits())
			})
		}
	}
}

// TestR3_3_StreamInvalidPerCallPolicy: an invalid per-call policy is the
// stream's first and only item (R3.3); nothing is sent, captured or emitted
// (R3.1). The event API's error event carries it as Detail with reason
// request_failed (R1.3).
func TestR3_3_StreamInvalidPerCallPolicy(t *testing.T) {
	for _, p := range scProviders() {
		t.Run(p.name, func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.step(p.full("x")...))
			rec := &rigtest.Recorder{}
			bad := &retry.Policy{MaxAttempts: -1, OnEvent: rec.OnEvent, OnWire: rec.OnWire}
			ctx := retry.WithPolicy(context.Background(), bad)

			run := scCollect(r.Client.Stream(ctx, p.request()))
			assert.Equal(t, 1, run.items, "first and only item")
			assert.Empty(t, run.chunks)
			var pe *layer.PolicyError
			require.ErrorAs(t, run.err, &pe)
			assert.Equal(t, layer.PolicyErrorCode, pe.Code)
			assert.Equal(t, "MaxAttempts", pe.Field)

			var evs []client.StreamEvent
			for e := range r.Client.StreamEvents(ctx, p.request()) {
				evs = append(evs, e)
			}
			require.Len(t, evs, 1)
			require.Equal(t, client.EventError, evs[0].Type)
			assert.Equal(t, layer.StreamRequestFailed, evs[0].Err.Reason)
			require.ErrorAs(t, evs[0].Err.Detail, &pe)
			assert.Equal(t, "MaxAttempts", pe.Field)
			assert.Nil(t, evs[0].Err.Recovery)

			assert.Zero(t, r.Server.Count(), "nothing is sent")
			assert.Empty(t, rec.Events(), "no event")
			assert.Empty(t, rec.Wire(), "no capture")
			assert.Empty(t, r.Rec.Events(), "the chain's own policy is not used either")
		})
	}
}

// TestR13_1_DropInStreamBodies: through a plain http.Client whose transport
// is the chain, a keepalive-only failure is resumed inside one response
// body (the keepalive bytes, then the whole second stream, no byte twice),
// and a cut after content ends the body with the typed interrupted error.
func TestR13_1_DropInStreamBodies(t *testing.T) {
	post := func(t *testing.T, r *rigtest.Rig, p scProv) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, r.Server.URL+p.codec().Path(), bytes.NewReader(p.body(t)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		return r.HTTP.Do(req)
	}
	for _, p := range scProviders() {
		t.Run(p.name+"/resumed", func(t *testing.T) {
			full := p.full("Hel", "lo")
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.keepalive), p.step(full...))
			resp, err := post(t, r, p)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, dropInKeepalive(p)+strings.Join(full, ""), string(b), "one body, no duplicated byte")
			assert.Equal(t, 2, r.Server.Count())
			assert.Equal(t, resumedTypes, scLifecycle(r.Rec.Types()))
		})
		t.Run(p.name+"/interrupted", func(t *testing.T) {
			r := rigtest.New(t, p.codec(), scPolicy(true), p.cut(p.keepalive, p.content("Hel")), p.step(p.full("x")...))
			resp, err := post(t, r, p)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			re := scRE(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
			assert.Equal(t, dropInKeepalive(p)+p.content("Hel")+dropInErrorFrame(p, re.Error()), string(b),
				"whole frames only, then the in-band error frame with the safe text")
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}

// dropInErrorFrame is the in-band error frame a drop-in body ends with
// before its read error, in the provider's own format: Ollama's error line,
// the OpenAI error event for SSE.
func dropInErrorFrame(p scProv, safe string) string {
	if p.ndjson {
		return `{"error":` + jsonString(safe) + "}\n"
	}
	return `data: {"error":{"message":` + jsonString(safe) + `,"type":"recourse_error"}}` + "\n\n"
}

// dropInKeepalive is what a drop-in body carries of a keepalive: SSE
// comments pass through; NDJSON blank lines are left out.
func dropInKeepalive(p scProv) string {
	if p.name == "ollama" {
		return ""
	}
	return p.keepalive
}

// scEventsOf returns the events of type typ, in order.
func scEventsOf(evs []event.Event, typ event.Type) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// scFirstFailed returns the safe failure of the first attempt_failed event.
func scFirstFailed(t testing.TB, evs []event.Event) event.Failure {
	t.Helper()
	failed := scEventsOf(evs, event.AttemptFailed)
	require.NotEmpty(t, failed, "no attempt_failed event")
	require.NotNil(t, failed[0].Failure)
	return *failed[0].Failure
}

func scCountStr(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

func scIndexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
