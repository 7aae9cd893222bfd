package ollama_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---------------------------------------------------------------------------
// Wire builders (shapes from wire-and-peers.md §2.2 and §2.3).

const lineHead = `{"model":"llama3.2","created_at":"2026-10-17T09:12:44.123456789Z","message":`

// contentOf returns a streaming line whose message has content s (JSON
// string body, already escaped).
func contentOf(s string) string {
	return lineHead + `{"role":"assistant","content":"` + s + `"},"done":false}` + "\n"
}

// thinkingOf returns a streaming line whose message has thinking s.
func thinkingOf(s string) string {
	return lineHead + `{"role":"assistant","content":"","thinking":"` + s + `"},"done":false}` + "\n"
}

// toolLine returns a streaming line with the given tool_calls array.
func toolLine(calls string) string {
	return lineHead + `{"role":"assistant","content":"","tool_calls":` + calls + `},"done":false}` + "\n"
}

// doneLine returns the final line with done_reason reason and all metrics.
func doneLine(reason string) string {
	return lineHead + `{"role":"assistant","content":""},"done":true,"done_reason":"` + reason + `",` +
		`"total_duration":5043500667,"load_duration":5025959,"prompt_eval_count":26,"prompt_eval_duration":325953000,` +
		`"eval_count":290,"eval_duration":4709213000}` + "\n"
}

const midStreamError = `{"error":"an error was encountered while running the model"}` + "\n"

// fullMetrics are doneLine's metrics.
var fullMetrics = &codec.Metrics{
	TotalDuration: 5043500667 * time.Nanosecond, LoadDuration: 5025959 * time.Nanosecond,
	PromptEvalCount: 26, PromptEvalDuration: 325953000 * time.Nanosecond,
	EvalCount: 290, EvalDuration: 4709213000 * time.Nanosecond,
}

var fullUsage = &chat.Usage{InputTokens: 26, OutputTokens: 290}

// ---------------------------------------------------------------------------
// Frame views and feeding.

// nview is the comparable meaning of a frame: everything but Raw, with the
// error reduced to its type and safe fields.
type nview struct {
	Index        int
	Keepalive    bool
	Reasoning    string
	Content      string
	Fragments    []chat.ToolCallFragment
	FinishReason string
	Done         bool
	Completion   *chat.Completion
	Metrics      *codec.Metrics
	Err          string
}

func nerrView(err error) string {
	var (
		pe *codec.ProtocolError
		ve *codec.ProviderError
		ie *codec.IncompleteError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return "protocol"
	case errors.As(err, &ve):
		return "provider code=" + ve.Code + " message=" + ve.Message
	case errors.As(err, &ie):
		return "stream incomplete_completion finish=" + ie.FinishReason
	}
	return fmt.Sprintf("%T", err)
}

func nviews(fs []codec.Frame) []nview {
	out := make([]nview, 0, len(fs))
	for _, f := range fs {
		out = append(out, nview{
			Index: f.Index, Keepalive: f.Keepalive, Reasoning: f.Reasoning, Content: f.Content,
			Fragments: f.Fragments, FinishReason: f.FinishReason, Done: f.Done, Completion: f.Completion,
			Metrics: f.Metrics, Err: nerrView(f.Err),
		})
	}
	return out
}

// nresult is what a decoder produced for one way of writing a stream.
type nresult struct {
	frames   []codec.Frame
	observed []codec.Counts // Observed after each Write
	final    codec.Counts
	end      error
}

// feedStream writes each element of writes to a fresh streaming observer,
// draining the queue after every Write, then calls End.
func feedStream(t testing.TB, writes [][]byte) nresult {
	d := newStream(t)
	var r nresult
	for _, w := range writes {
		d.Write(w)
		for {
			f, ok := d.Next()
			if !ok {
				break
			}
			r.frames = append(r.frames, f)
		}
		r.observed = append(r.observed, d.Observed())
	}
	r.end = d.End()
	for {
		// End may queue the frames of a final unterminated line.
		f, ok := d.Next()
		if !ok {
			break
		}
		r.frames = append(r.frames, f)
	}
	r.final = d.Observed()
	return r
}

// streamPlans returns the ways the tests write in: in one Write, split in
// two at every byte boundary, and one byte at a time.
func streamPlans(in []byte) map[string][][]byte {
	ps := map[string][][]byte{"one write": {in}}
	for i := 1; i < len(in); i++ {
		ps[fmt.Sprintf("split at %d", i)] = [][]byte{in[:i], in[i:]}
	}
	bytewise := make([][]byte, len(in))
	for i := range in {
		bytewise[i] = in[i : i+1]
	}
	ps["byte at a time"] = bytewise
	return ps
}

func rawOf(fs []codec.Frame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Raw...)
	}
	return b
}

// streamInvariants checks what holds for every stream, however it was
// written: Observed never decreases and ends equal to the sum of the
// frames' semantics; nothing follows an error or a Done frame; End is nil
// exactly when the last frame is terminal; keepalives and malformed lines
// carry Index 0, no semantics and no metrics; other frames are numbered
// from 1 in order; only done lines carry metrics.
func streamInvariants(t testing.TB, r nresult) {
	t.Helper()
	for i := 1; i < len(r.observed); i++ {
		prev, cur := r.observed[i-1], r.observed[i]
		if cur.ReasoningBytes < prev.ReasoningBytes || cur.ContentBytes < prev.ContentBytes ||
			cur.ToolFragments < prev.ToolFragments || cur.CompletedToolCalls < prev.CompletedToolCalls {
			t.Fatalf("Observed decreased after write %d: %+v -> %+v", i, prev, cur)
		}
	}
	var sum codec.Counts
	next := 1
	for i, f := range r.frames {
		sum = sum.Add(f.Semantic())
		if (f.Err != nil || f.Done) && i != len(r.frames)-1 {
			t.Fatalf("frame %d is terminal but %d frames follow it", i, len(r.frames)-1-i)
		}
		if f.Err != nil && f.Done {
			t.Fatalf("frame %d is both Done and an error", i)
		}
		if f.Done && f.Completion == nil {
			t.Fatalf("Done frame %d has no Completion", i)
		}
		var pe *codec.ProtocolError
		if f.Keepalive || errors.As(f.Err, &pe) {
			if f.Index != 0 || f.Semantic().Any() || f.Metrics != nil {
				t.Fatalf("keepalive or malformed frame %d has Index %d, semantics %+v or metrics", i, f.Index, f.Semantic())
			}
			continue
		}
		if f.Index != next {
			t.Fatalf("frame %d has Index %d, want %d", i, f.Index, next)
		}
		next++
	}
	if r.final != sum {
		t.Fatalf("Observed() = %+v, sum of frame semantics = %+v", r.final, sum)
	}
	ended := len(r.frames) > 0 && (r.frames[len(r.frames)-1].Err != nil || r.frames[len(r.frames)-1].Done)
	if ended != (r.end == nil) {
		t.Fatalf("End() = %v after a stream whose terminal frame was seen: %v", r.end, ended)
	}
}

// ndjsonCase is one table entry: in is the stream the decoder consumes;
// tail follows it on the wire and is never consumed (it comes after the
// terminal frame, or is an unterminated line).
type ndjsonCase struct {
	name       string
	in         string
	tail       string
	want       []nview
	incomplete bool // End reports an incomplete stream
}

// runStreamCases runs each case in one Write, split at every byte boundary
// and one byte at a time; all must yield the wanted frames, each with the
// same Raw, whose concatenation is exactly in.
func runStreamCases(t *testing.T, cases []ndjsonCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			input := []byte(c.in + c.tail)
			base := feedStream(t, [][]byte{input})
			sameStream(t, c.want, nviews(base.frames), "one write")
			if got := string(rawOf(base.frames)); got != c.in {
				t.Fatalf("Raw bytes of all frames:\n got %q\nwant %q", got, c.in)
			}
			if c.incomplete != errors.Is(base.end, ollama.ErrIncompleteStream) || (!c.incomplete && base.end != nil) {
				t.Fatalf("End() = %v, want incomplete: %v", base.end, c.incomplete)
			}
			streamInvariants(t, base)
			for name, writes := range streamPlans(input) {
				r := feedStream(t, writes)
				sameStream(t, nviews(base.frames), nviews(r.frames), name)
				for i := range r.frames {
					if !bytes.Equal(base.frames[i].Raw, r.frames[i].Raw) {
						t.Fatalf("%s: frame %d Raw = %q, want %q", name, i, r.frames[i].Raw, base.frames[i].Raw)
					}
				}
				if base.end != r.end {
					t.Fatalf("%s: End() = %v, want %v", name, r.end, base.end)
				}
				streamInvariants(t, r)
			}
		})
	}
}

// sameStream stops the test unless want and got are deeply equal.
func sameStream(t testing.TB, want, got []nview, what string) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: frames differ\nwant:", what)
	for i, v := range want {
		fmt.Fprintf(&b, "\n  %d: %s", i, showView(v))
	}
	b.WriteString("\n got:")
	for i, v := range got {
		fmt.Fprintf(&b, "\n  %d: %s", i, showView(v))
	}
	t.Fatal(b.String())
}

func showView(v nview) string {
	s := fmt.Sprintf("%+v", v)
	if v.Completion != nil {
		s += fmt.Sprintf(" completion=%+v", *v.Completion)
	}
	if v.Completion != nil && v.Completion.Usage != nil {
		s += fmt.Sprintf(" usage=%+v", *v.Completion.Usage)
	}
	if v.Metrics != nil {
		s += fmt.Sprintf(" metrics=%+v", *v.Metrics)
	}
	return s
}

// View shorthands.

func nka() nview                                     { return nview{Keepalive: true} }
func ncontent(i int, s string) nview                 { return nview{Index: i, Content: s} }
func nthinking(i int, s string) nview                { return nview{Index: i, Reasoning: s} }
func nfrag(i int, fr ...chat.ToolCallFragment) nview { return nview{Index: i, Fragments: fr} }
func nmalformed() nview                              { return nview{Err: "protocol"} }

func ncompletion(content, thinking string, u *chat.Usage, calls ...chat.ToolCall) *chat.Completion {
	return &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: content, Reasoning: thinking, ToolCalls: calls},
		FinishReason: "stop", Model: "llama3.2", Usage: u,
	}
}

func ndone(i int, c *chat.Completion, m *codec.Metrics) nview {
	return nview{Index: i, Done: true, FinishReason: "stop", Completion: c, Metrics: m}
}

// ---------------------------------------------------------------------------
// R13.3 acceptance, R13.6 metrics.

func TestR13_3_OllamaDoneStopIsAccepted(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{
		{
			name: "content lines then done stop with metrics",
			in:   contentOf("Hel") + contentOf("lo") + doneLine("stop"),
			want: []nview{ncontent(1, "Hel"), ncontent(2, "lo"), ndone(3, ncompletion("Hello", "", fullUsage), fullMetrics)},
		},
		{
			name: "thinking lines come first",
			in:   thinkingOf("2+2") + thinkingOf("=4") + contentOf("4") + doneLine("stop"),
			want: []nview{nthinking(1, "2+2"), nthinking(2, "=4"), ncontent(3, "4"), ndone(4, ncompletion("4", "2+2=4", fullUsage), fullMetrics)},
		},
		{
			name: "the done line may carry content; zero metrics are left out",
			in:   `{"model":"llama3.2","message":{"role":"assistant","content":"!"},"done":true,"done_reason":"stop","eval_count":1}` + "\n",
			want: []nview{{Index: 1, Content: "!", Done: true, FinishReason: "stop",
				Completion: ncompletion("!", "", &chat.Usage{OutputTokens: 1}), Metrics: &codec.Metrics{EvalCount: 1}}},
		},
		{
			name: "no counts, no usage",
			in:   `{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}` + "\n",
			want: []nview{ndone(1, ncompletion("", "", nil), &codec.Metrics{})},
		},
		{
			name: "lines after done are not consumed",
			in:   contentOf("a") + doneLine("stop"),
			tail: contentOf("late") + "\n" + midStreamError,
			want: []nview{ncontent(1, "a"), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
		},
		{
			name: "CRLF line ends and whitespace around the object",
			in:   "  " + strings.TrimSuffix(contentOf("a"), "\n") + " \r\n" + strings.TrimSuffix(doneLine("stop"), "\n") + "\r\n",
			want: []nview{ncontent(1, "a"), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
		},
	})
}

// TestR13_3_OllamaDoneWithoutReasonIsAccepted: done:true is the terminal
// frame; without a done_reason the finish is unknown (""), and the stream
// ends there, accepted, as the same unary answer is (Decode).
func TestR13_3_OllamaDoneWithoutReasonIsAccepted(t *testing.T) {
	t.Parallel()
	unknown := func(c *chat.Completion) *chat.Completion { c.FinishReason = ""; return c }
	runStreamCases(t, []ndjsonCase{
		{
			name: "content then done without a done_reason",
			in:   contentOf("a") + `{"model":"llama3.2","message":{"role":"assistant","content":"b"},"done":true,"eval_count":2}` + "\n",
			tail: contentOf("never"),
			want: []nview{ncontent(1, "a"), {Index: 2, Content: "b", Done: true,
				Completion: unknown(ncompletion("ab", "", &chat.Usage{OutputTokens: 2})), Metrics: &codec.Metrics{EvalCount: 2}}},
		},
		{
			name: "a tool call completes at a done without a done_reason",
			in:   toolLine(`[{"function":{"name":"f","arguments":{}}}]`) + `{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true}` + "\n",
			want: []nview{
				nfrag(1, chat.ToolCallFragment{Name: "f", Arguments: "{}"}),
				{Index: 2, Done: true, Completion: unknown(ncompletion("", "", nil, chat.ToolCall{Name: "f", Arguments: []byte("{}")})), Metrics: &codec.Metrics{}},
			},
		},
	})
	comp, err := ollama.New().Decode([]byte(`{"model":"llama3.2","message":{"role":"assistant","content":"ab"},"done":true}`))
	require.NoError(t, err)
	assert.Equal(t, "", comp.FinishReason, "the unary answer reads the same")
}

func TestR13_3_OllamaLengthIsIncompleteCompletionWithMetrics(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{
		{
			name: "done_reason length",
			in:   contentOf("Once") + strings.Replace(doneLine("length"), `"content":""`, `"content":" upon"`, 1),
			tail: contentOf("never"),
			want: []nview{
				ncontent(1, "Once"),
				{Index: 2, Content: " upon", FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "llama3.2", Usage: fullUsage}, Metrics: fullMetrics, Err: "stream incomplete_completion finish=length"},
			},
		},
		{
			name: "a tool call before length never completes",
			in:   toolLine(`[{"function":{"name":"f","arguments":{}}}]`) + doneLine("length"),
			want: []nview{
				nfrag(1, chat.ToolCallFragment{Name: "f", Arguments: "{}"}),
				{Index: 2, FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "llama3.2", Usage: fullUsage}, Metrics: fullMetrics, Err: "stream incomplete_completion finish=length"},
			},
		},
		{
			name: "done_reason load",
			in:   `{"model":"llama3.2","created_at":"2026-10-17T09:12:44Z","message":{"role":"assistant","content":""},"done_reason":"load","done":true}` + "\n",
			want: []nview{{Index: 1, FinishReason: "load", Completion: &chat.Completion{FinishReason: "load", Model: "llama3.2"}, Metrics: &codec.Metrics{}, Err: "stream incomplete_completion finish=load"}},
		},
	})
}

func TestR13_3_OllamaEOFBeforeDoneIsIncomplete(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{
		{name: "empty body", in: "", incomplete: true, want: []nview{}},
		{name: "keepalives only", in: "\n\n", incomplete: true, want: []nview{nka(), nka()}},
		{name: "content without done", in: contentOf("a"), incomplete: true, want: []nview{ncontent(1, "a")}},
		{name: "done:false last", in: contentOf("a") + `{"model":"m","message":{"content":""},"done":false}` + "\n", incomplete: true,
			want: []nview{ncontent(1, "a"), ncontent(2, "")}},
		{
			name:       "cut mid-line",
			in:         contentOf("a"),
			tail:       `{"model":"llama3.2","message":{"role":"assistant","content":"b`,
			incomplete: true,
			want:       []nview{ncontent(1, "a")},
		},
	})
}

// TestR13_3_OllamaFinalLineWithoutNewlineIsAFrame: at HTTP EOF a final line
// left without its "\n" that holds one whole JSON value is a frame, as the
// official Ollama clients parse what remains buffered at the end — so a
// done:true line sent without "\n" (or with whitespace after it) is the
// accepted end; a content line so sent is delivered and the stream is
// still incomplete; a done_reason length line so sent ends it as
// incomplete_completion; a line cut inside its JSON stays a cut.
func TestR13_3_OllamaFinalLineWithoutNewlineIsAFrame(t *testing.T) {
	t.Parallel()
	done := strings.TrimSuffix(doneLine("stop"), "\n")
	runStreamCases(t, []ndjsonCase{
		{
			name: "done stop without newline",
			in:   contentOf("a") + done,
			want: []nview{ncontent(1, "a"), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
		},
		{
			name: "done stop, then a space, without newline",
			in:   contentOf("a") + done + " ",
			want: []nview{ncontent(1, "a"), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
		},
		{
			name: "done stop, then CR, without newline",
			in:   contentOf("a") + done + "\r",
			want: []nview{ncontent(1, "a"), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
		},
		{
			name: "done stop alone without newline",
			in:   done,
			want: []nview{ndone(1, ncompletion("", "", fullUsage), fullMetrics)},
		},
		{
			name:       "a content line without newline is delivered, the stream is incomplete",
			in:         contentOf("a") + strings.TrimSuffix(contentOf("b"), "\n"),
			incomplete: true,
			want:       []nview{ncontent(1, "a"), ncontent(2, "b")},
		},
		{
			name: "done length without newline",
			in:   strings.TrimSuffix(doneLine("length"), "\n"),
			want: []nview{{Index: 1, FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "llama3.2", Usage: fullUsage},
				Metrics: fullMetrics, Err: "stream incomplete_completion finish=length"}},
		},
		{
			name:       "cut inside the done line",
			in:         contentOf("a"),
			tail:       done[:len(done)-1],
			incomplete: true,
			want:       []nview{ncontent(1, "a")},
		},
	})
}

func TestR13_3_OllamaEndVerdict(t *testing.T) {
	t.Parallel()
	d := newStream(t)
	if !errors.Is(d.End(), ollama.ErrIncompleteStream) {
		t.Fatalf("End before any byte = %v", d.End())
	}
	d.Write([]byte(contentOf("a") + strings.TrimSuffix(doneLine("stop"), "\n")))
	if err := d.End(); err != nil {
		t.Fatalf("End with an unterminated whole done line = %v, want nil (R13.3)", err)
	}
	if err := d.End(); err != nil {
		t.Fatalf("End called again = %v", err)
	}
	d = newStream(t)
	d.Write([]byte(contentOf("a") + doneLine("stop")))
	if err := d.End(); err != nil {
		t.Fatalf("End after the done line = %v", err)
	}
	d = newStream(t)
	d.Write([]byte(midStreamError))
	if err := d.End(); err != nil {
		t.Fatalf("End after an error frame = %v, want nil: the frame carries the error", err)
	}
}

// ---------------------------------------------------------------------------
// R13.4 tool calls, R13.2 counts, R13.6 indexes.

func TestR13_4_OllamaWholeToolCallsCompleteOnlyAtDone(t *testing.T) {
	t.Parallel()
	call := func(id, name, args string) chat.ToolCall {
		return chat.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	runStreamCases(t, []ndjsonCase{
		{
			name: "one call per line, arguments an object",
			in: thinkingOf("weather?") +
				toolLine(`[{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Tokyo"}}}]`) +
				toolLine(`[{"function":{"index":1,"name":"get_time","arguments":{"tz":"JST","opts":{"h24":true}}}}]`) +
				doneLine("stop"),
			want: []nview{
				nthinking(1, "weather?"),
				nfrag(2, chat.ToolCallFragment{Index: 0, ID: "call_1", Name: "get_weather", Arguments: `{"city":"Tokyo"}`}),
				nfrag(3, chat.ToolCallFragment{Index: 1, Name: "get_time", Arguments: `{"tz":"JST","opts":{"h24":true}}`}),
				ndone(4, ncompletion("", "weather?", fullUsage,
					call("call_1", "get_weather", `{"city":"Tokyo"}`), call("", "get_time", `{"tz":"JST","opts":{"h24":true}}`)), fullMetrics),
			},
		},
		{
			name: "two calls in one line; absent and null arguments are {}",
			in:   toolLine(`[{"function":{"name":"a"}},{"function":{"name":"b","arguments":null}}]`) + doneLine("stop"),
			want: []nview{
				nfrag(1, chat.ToolCallFragment{Index: 0, Name: "a", Arguments: "{}"}, chat.ToolCallFragment{Index: 1, Name: "b", Arguments: "{}"}),
				ndone(2, ncompletion("", "", fullUsage, call("", "a", "{}"), call("", "b", "{}")), fullMetrics),
			},
		},
		{
			name: "arguments keep their bytes",
			in:   toolLine(`[{"function":{"name":"f","arguments":{ "a" : [1, {"b":null}] }}}]`) + doneLine("stop"),
			want: []nview{
				nfrag(1, chat.ToolCallFragment{Name: "f", Arguments: `{ "a" : [1, {"b":null}] }`}),
				ndone(2, ncompletion("", "", fullUsage, call("", "f", `{ "a" : [1, {"b":null}] }`)), fullMetrics),
			},
		},
	})
	r := feedStream(t, [][]byte{[]byte(toolLine(`[{"function":{"name":"a","arguments":{}}}]`))})
	if want := (codec.Counts{ToolFragments: 1}); r.final != want {
		t.Errorf("before done: Observed = %+v, want %+v", r.final, want)
	}
}

func TestR13_2_OllamaCountsAreDecodedUTF8Bytes(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{
		{
			name: "é🙂 is 6 bytes",
			in:   thinkingOf("é🙂") + contentOf(`\u00e9\ud83d\ude42`) + doneLine("stop"),
			want: []nview{nthinking(1, "é🙂"), ncontent(2, "é🙂"), ndone(3, ncompletion("é🙂", "é🙂", fullUsage), fullMetrics)},
		},
		{
			name: "escaped keys are decoded",
			in:   `{"m\u0065ssage":{"con\u0074ent":"hi","thinkin\u0067":"t"},"done":false}` + "\n",
			want: []nview{{Index: 1, Content: "hi", Reasoning: "t"}}, incomplete: true,
		},
		{
			name: "quoted look-alikes are content",
			in:   contentOf(`{\"done\":true,\"done_reason\":\"stop\",\"tool_calls\":[]}\n`),
			want: []nview{ncontent(1, "{\"done\":true,\"done_reason\":\"stop\",\"tool_calls\":[]}\n")}, incomplete: true,
		},
	})
	r := feedStream(t, [][]byte{[]byte(thinkingOf("é🙂") + contentOf("é🙂"))})
	if want := (codec.Counts{ReasoningBytes: 6, ContentBytes: 6}); r.final != want {
		t.Errorf("Observed = %+v, want %+v", r.final, want)
	}
}

func TestR13_6_OllamaFrameIndexCountsNonKeepaliveFramesFromOne(t *testing.T) {
	t.Parallel()
	r := feedStream(t, [][]byte{[]byte("\n" + contentOf("a") + "\n  \n" + thinkingOf("t") + "\r\n" + doneLine("stop"))})
	var idx []int
	for _, f := range r.frames {
		if f.Keepalive {
			if f.Index != 0 {
				t.Errorf("keepalive Index = %d", f.Index)
			}
			continue
		}
		idx = append(idx, f.Index)
	}
	if !reflect.DeepEqual(idx, []int{1, 2, 3}) {
		t.Errorf("indexes = %v, want [1 2 3]", idx)
	}
	if len(r.frames) != 7 {
		t.Errorf("frames = %d, want 7 (4 keepalives)", len(r.frames))
	}
}

// ---------------------------------------------------------------------------
// R14.2 keepalives, R4.7 in-band errors, R4.5 malformed lines.

func TestR14_2_OllamaBlankLinesAreKeepalives(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{{
		name: "empty, spaces, CRLF",
		in:   "\n" + contentOf("a") + "   \n\r\n\t\n" + doneLine("stop"),
		want: []nview{nka(), ncontent(1, "a"), nka(), nka(), nka(), ndone(2, ncompletion("a", "", fullUsage), fullMetrics)},
	}})
}

func TestR4_7_OllamaInBandErrorsEndTheStream(t *testing.T) {
	t.Parallel()
	runStreamCases(t, []ndjsonCase{
		{
			name: "mid-stream error line with status 200",
			in:   contentOf("a") + "\n" + midStreamError,
			tail: doneLine("stop"),
			want: []nview{ncontent(1, "a"), nka(), {Index: 2, Err: "provider code= message=an error was encountered while running the model"}},
		},
		{
			name: "first line",
			in:   midStreamError,
			want: []nview{{Index: 1, Err: "provider code= message=an error was encountered while running the model"}},
		},
		{
			name: "an error object (a proxy)",
			in:   `{"error":{"message":"upstream timeout","type":"api_error"}}` + "\n",
			tail: contentOf("b"),
			want: []nview{{Index: 1, Err: "provider code= message=upstream timeout"}},
		},
		{
			name: "error null is no error",
			in:   `{"error":null,"message":{"content":"a"},"done":true,"done_reason":"stop"}` + "\n",
			want: []nview{{Index: 1, Content: "a", FinishReason: "stop", Done: true, Metrics: &codec.Metrics{},
				Completion: &chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "a"}, FinishReason: "stop"}}},
		},
	})
}

func TestR4_5_OllamaMalformedLinesEndTheStream(t *testing.T) {
	t.Parallel()
	after := contentOf("after") + doneLine("stop")
	cases := []ndjsonCase{
		{name: "truncated JSON", in: contentOf("a") + `{"message":{"content":"b"` + "\n", want: []nview{ncontent(1, "a"), nmalformed()}},
		{name: "not an object", in: "[]\n", want: []nview{nmalformed()}},
		{name: "null", in: "null\n", want: []nview{nmalformed()}},
		{name: "two objects", in: "{} {}\n", want: []nview{nmalformed()}},
		{name: "invalid UTF-8", in: "{\"message\":{\"content\":\"\xff\"},\"done\":false}\n", want: []nview{nmalformed()}},
		{name: "error is a number", in: `{"error":42}` + "\n", want: []nview{nmalformed()}},
		{name: "content is not a string", in: `{"message":{"content":1},"done":false}` + "\n", want: []nview{nmalformed()}},
		{name: "done is a string", in: `{"message":{"content":""},"done":"true","done_reason":"stop"}` + "\n", want: []nview{nmalformed()}},
		{name: "tool call without a name", in: toolLine(`[{"function":{"arguments":{}}}]`), want: []nview{nmalformed()}},
		{name: "tool call arguments a string", in: toolLine(`[{"function":{"name":"f","arguments":"{}"}}]`), want: []nview{nmalformed()}},
		{
			name: "a malformed done line carries no metrics",
			in:   contentOf("a") + strings.Replace(doneLine("stop"), `"eval_count":290`, `"eval_count":"290"`, 1),
			want: []nview{ncontent(1, "a"), nmalformed()},
		},
	}
	for i := range cases {
		cases[i].tail = after
	}
	runStreamCases(t, cases)
}

func TestR4_5_OllamaOversizedLineIsProtocolError(t *testing.T) {
	t.Parallel()
	d := newStream(t)
	d.Write([]byte(contentOf("a")))
	d.Write([]byte(`{"message":{"content":"`))
	d.Write(bytes.Repeat([]byte("x"), 8<<20+1))
	var fs []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		fs = append(fs, f)
	}
	if len(fs) != 2 || fs[0].Content != "a" || nerrView(fs[1].Err) != "protocol" {
		t.Fatalf("frames = %v, want content then a protocol error", nviews(fs))
	}
	if err := d.End(); err != nil {
		t.Errorf("End() = %v", err)
	}
}

// ---------------------------------------------------------------------------
// Raw bytes.

func TestR12_2_OllamaRawIsExactAndOwned(t *testing.T) {
	t.Parallel()
	in := []byte("\n" + contentOf("a") + "\r\n" + doneLine("stop"))
	buf := bytes.Clone(in)
	d := newStream(t)
	d.Write(buf)
	clear(buf) // the decoder must not retain the caller's buffer
	var fs []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		fs = append(fs, f)
	}
	if len(fs) != 4 {
		t.Fatalf("frames = %d, want 4", len(fs))
	}
	if !bytes.Equal(rawOf(fs), in) {
		t.Fatalf("Raw bytes of all frames = %q, want %q", rawOf(fs), in)
	}
	for i, f := range fs {
		if len(f.Raw) != cap(f.Raw) {
			t.Errorf("frame %d Raw has spare capacity %d", i, cap(f.Raw)-len(f.Raw))
		}
	}
	want := string(fs[1].Raw)
	_ = append(fs[0].Raw, "garbage"...)
	for i := range fs[0].Raw {
		fs[0].Raw[i] = 'X'
	}
	if string(fs[1].Raw) != want {
		t.Errorf("writing to one frame's Raw changed another's")
	}
	d2 := newStream(t)
	d2.Write([]byte("\n"))
	if f, ok := d2.Next(); !ok || string(f.Raw) != "\n" {
		t.Errorf("another decoder's keepalive Raw = %q", f.Raw)
	}
}

// With RequestInfo.DropText (a drop-in stream) the decoder returns the same
// frames and counts, and the terminal Completion has empty Content and
// Reasoning: the text is not accumulated.
func TestDropTextKeepsAllButTheAccumulatedText(t *testing.T) {
	t.Parallel()
	stream := thinkingOf("2+2") + contentOf("Hel") + "\n" + contentOf("lo") + doneLine("stop")
	decode := func(drop bool) ([]codec.Frame, codec.Counts) {
		d := ollama.New().NewObserver(codec.RequestInfo{Model: "llama3.2", Operation: codec.Streaming, DropText: drop}).(codec.StreamDecoder)
		d.Write([]byte(stream))
		var fs []codec.Frame
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			fs = append(fs, f)
		}
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		return fs, d.Observed()
	}
	kept, keptCounts := decode(false)
	dropped, droppedCounts := decode(true)
	if keptCounts != droppedCounts || len(kept) != len(dropped) {
		t.Fatalf("counts %+v over %d frames, want %+v over %d", droppedCounts, len(dropped), keptCounts, len(kept))
	}
	last := kept[len(kept)-1]
	if !last.Done || last.Completion.Message.Content != "Hello" || last.Completion.Message.Reasoning != "2+2" {
		t.Fatalf("terminal frame without DropText: %+v", last)
	}
	want := *last.Completion
	want.Message.Content, want.Message.Reasoning = "", ""
	kept[len(kept)-1].Completion = &want
	if !reflect.DeepEqual(kept, dropped) {
		t.Fatalf("frames with DropText\n%+v\nwant\n%+v", dropped, kept)
	}
}
