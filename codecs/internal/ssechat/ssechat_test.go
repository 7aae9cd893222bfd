package ssechat_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/ssechat"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---------------------------------------------------------------------------
// Wire builders (shapes from wire-and-peers.md §1.3 and §3).

// chunkHead opens an OpenAI chat.completion.chunk up to its first choice's
// delta.
const chunkHead = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":`

// openai returns an OpenAI data event whose first choice has delta and an
// explicit "finish_reason":null.
func openai(delta string) string {
	return "data: " + chunkHead + delta + `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

// finish returns an OpenAI data event with an empty delta and a finish reason.
func finish(reason string) string {
	return "data: " + chunkHead + `{},"logprobs":null,"finish_reason":"` + reason + `"}]}` + "\n\n"
}

// usage is the include_usage chunk: no choices, usage filled in.
const usage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}` + "\n\n"

// omlx returns an oMLX data event: exclude_none, so no finish_reason key.
func omlx(delta string) string {
	return `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":` + delta + "}]}\n\n"
}

// omlxFinish is oMLX's final chunk with an empty delta.
func omlxFinish(reason string) string {
	return `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}` + "\n\n"
}

const (
	done           = "data: [DONE]\n\n"
	keepAlive      = ": keep-alive\n\n"
	openRouterPing = ": OPENROUTER PROCESSING\n\n"
	modelKeepalive = `data: {"model":"keepalive"}` + "\n\n"
)

// ---------------------------------------------------------------------------
// Frame views and feeding.

// view is the comparable meaning of a frame: everything but Raw, with the
// error reduced to its type and safe fields.
type view struct {
	Index        int
	Keepalive    bool
	Reasoning    string
	Content      string
	Fragments    []chat.ToolCallFragment
	FinishReason string
	Done         bool
	Completion   *chat.Completion
	Err          string
}

// errView names err's type and its safe fields.
func errView(err error) string {
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

func viewOf(f codec.Frame) view {
	return view{
		Index: f.Index, Keepalive: f.Keepalive, Reasoning: f.Reasoning, Content: f.Content,
		Fragments: f.Fragments, FinishReason: f.FinishReason, Done: f.Done, Completion: f.Completion,
		Err: errView(f.Err),
	}
}

func views(fs []codec.Frame) []view {
	out := make([]view, 0, len(fs))
	for _, f := range fs {
		out = append(out, viewOf(f))
	}
	return out
}

// result is what a decoder produced for one way of writing a stream.
type result struct {
	frames   []codec.Frame
	observed []codec.Counts // Observed after each Write
	end      error
	dec      *ssechat.Decoder
}

// feed writes each element of writes to a fresh decoder, draining the queue
// after every Write as a consumer does, then calls End.
func feed(writes [][]byte) result {
	d := ssechat.New()
	var r result
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
	r.end, r.dec = d.End(), d
	return r
}

// plan is one way of writing a stream.
type plan struct {
	name   string
	writes [][]byte
}

// plans returns the ways the tests write in: in one Write, split in two at
// every byte boundary, and one byte at a time.
func plans(in []byte) []plan {
	ps := []plan{{"one write", [][]byte{in}}}
	for i := 1; i < len(in); i++ {
		ps = append(ps, plan{fmt.Sprintf("split at %d", i), [][]byte{in[:i], in[i:]}})
	}
	bytewise := make([][]byte, len(in))
	for i := range in {
		bytewise[i] = in[i : i+1]
	}
	return append(ps, plan{"byte at a time", bytewise})
}

func concatRaw(fs []codec.Frame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Raw...)
	}
	return b
}

func isProtocol(err error) bool {
	var pe *codec.ProtocolError
	return errors.As(err, &pe)
}

func sum(fs []codec.Frame) codec.Counts {
	var c codec.Counts
	for _, f := range fs {
		c = c.Add(f.Semantic())
	}
	return c
}

// invariants checks what holds for every stream, however it was written:
// Observed never decreases and ends equal to the sum of the frames'
// semantics; nothing follows an error or a Done frame; End is nil exactly
// when the last frame is terminal; keepalives and malformed frames carry
// Index 0 and no semantics, other frames are numbered from 1 in order.
func invariants(t testing.TB, r result) {
	t.Helper()
	for i := 1; i < len(r.observed); i++ {
		prev, cur := r.observed[i-1], r.observed[i]
		require.False(t, cur.ReasoningBytes < prev.ReasoningBytes || cur.ContentBytes < prev.ContentBytes ||
			cur.ToolFragments < prev.ToolFragments || cur.CompletedToolCalls < prev.CompletedToolCalls,
			"Observed decreased after write %d: %+v -> %+v", i, prev, cur)
	}
	require.Equal(t, sum(r.frames), r.dec.Observed(), "Observed() against the sum of frame semantics")
	next := 1
	for i, f := range r.frames {
		terminal := f.Err != nil || f.Done
		require.False(t, terminal && i != len(r.frames)-1, "frame %d is terminal (%v) but %d frames follow it", i, viewOf(f), len(r.frames)-1-i)
		require.False(t, f.Err != nil && f.Done, "frame %d is both Done and an error", i)
		require.False(t, f.Done && f.Completion == nil, "Done frame %d has no Completion", i)
		if f.Keepalive || isProtocol(f.Err) {
			require.False(t, f.Index != 0 || f.Semantic().Any(), "keepalive or malformed frame %d has Index %d or semantics %+v", i, f.Index, f.Semantic())
			continue
		}
		require.False(t, f.Index != next, "frame %d has Index %d, want %d", i, f.Index, next)
		next++
	}
	ended := len(r.frames) > 0 && (r.frames[len(r.frames)-1].Err != nil || r.frames[len(r.frames)-1].Done)
	require.False(t, ended != (r.end == nil), "End() = %v after a stream whose terminal frame was seen: %v", r.end, ended)
}

// streamCase is one table entry: in is the stream the decoder consumes;
// tail follows it on the wire and must never be consumed (it comes after
// the terminal frame, or is an incomplete event).
type streamCase struct {
	name string
	in   string
	tail string
	want []view
	// incomplete is set when End must report an incomplete stream.
	incomplete bool
}

// runCases runs each case in one Write, split at every byte boundary and
// one byte at a time, and checks that all of them yield the wanted frames,
// whose Raw bytes concatenated are exactly in.
func runCases(t *testing.T, cases []streamCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			input := []byte(c.in + c.tail)
			base := feed([][]byte{input})
			require.Equal(t, c.want, views(base.frames))
			assert.Equal(t, c.in, string(concatRaw(base.frames)), "Raw bytes of all frames")
			if c.incomplete {
				assert.True(t, errors.Is(base.end, ssechat.ErrIncomplete), "End() = %v, want ErrIncomplete", base.end)
			} else {
				assert.True(t, base.end == nil, "End() = %v, want nil", base.end)
			}
			invariants(t, base)
			for _, p := range plans(input) {
				r := feed(p.writes)
				require.Equal(t, views(base.frames), views(r.frames), p.name)
				if got := string(concatRaw(r.frames)); got != c.in {
					// The one split-dependent loss (see the package doc): a
					// "\r" completes the terminal event, and the "\n" of its
					// "\r\n", written later, belongs to no frame.
					last := r.frames[len(r.frames)-1]
					require.True(t, strings.HasSuffix(c.in, "\r\n") && got == c.in[:len(c.in)-1] && (last.Done || last.Err != nil),
						"%s: Raw bytes of all frames:\nwant %q\n got %q", p.name, c.in, got)
				}
				if !strings.Contains(c.in, "\r") {
					// A CR ending an event may be followed by an LF that
					// arrives in a later Write and then opens the next
					// frame's Raw; only with LF line ends is each frame's
					// Raw independent of the split.
					for i := range r.frames {
						require.Equal(t, string(base.frames[i].Raw), string(r.frames[i].Raw), "%s: frame %d Raw", p.name, i)
					}
				}
				require.Equal(t, base.end, r.end, p.name)
				invariants(t, r)
			}
		})
	}
}

// Frame view shorthands.

func ka() view                     { return view{Keepalive: true} }
func content(i int, s string) view { return view{Index: i, Content: s} }
func reasoning(i int, s string) view {
	return view{Index: i, Reasoning: s}
}
func empty(i int) view { return view{Index: i} }
func finished(i int, reason string) view {
	return view{Index: i, FinishReason: reason}
}

func completion(content, reasoning, finish, model, id string, u *chat.Usage, calls ...chat.ToolCall) *chat.Completion {
	return &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: content, Reasoning: reasoning, ToolCalls: calls},
		FinishReason: finish, Model: model, ID: id, Usage: u,
	}
}

func doneView(i int, c *chat.Completion) view {
	return view{Index: i, Done: true, FinishReason: c.FinishReason, Completion: c}
}

// ---------------------------------------------------------------------------
// R13.3 acceptance.

func TestR13_3_StopThenDoneIsAccepted(t *testing.T) {
	t.Parallel()
	u := &chat.Usage{InputTokens: 9, OutputTokens: 2}
	runCases(t, []streamCase{
		{
			name: "role, content deltas, finish stop, usage chunk, [DONE]",
			in: openai(`{"role":"assistant","content":"","refusal":null}`) + openai(`{"content":"Hel"}`) +
				openai(`{"content":"lo"}`) + finish("stop") + usage + done,
			want: []view{
				content(1, ""), content(2, "Hel"), content(3, "lo"), finished(4, "stop"), empty(5),
				doneView(6, completion("Hello", "", "stop", "gpt-4o", "chatcmpl-1", u)),
			},
		},
		{
			name: "finish stop in the last content chunk, no usage",
			in:   "data: " + chunkHead + `{"content":"ok"},"finish_reason":"stop"}]}` + "\n\n" + done,
			want: []view{
				{Index: 1, Content: "ok", FinishReason: "stop"},
				doneView(2, completion("ok", "", "stop", "gpt-4o", "chatcmpl-1", nil)),
			},
		},
		{
			name: "bytes after [DONE] are not consumed",
			in:   openai(`{"content":"x"}`) + finish("stop") + done,
			tail: openai(`{"content":"late"}`) + ": keep-alive\n\n",
			want: []view{content(1, "x"), finished(2, "stop"), doneView(3, completion("x", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "CRLF line ends and a byte order mark",
			in: "\xEF\xBB\xBF" + strings.ReplaceAll(keepAlive+openai(`{"content":"a"}`)+finish("stop"), "\n", "\r\n") +
				"data: [DONE]\r\n\r\n",
			want: []view{ka(), content(1, "a"), finished(2, "stop"), doneView(3, completion("a", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "a data value split over two data lines is joined with a newline",
			in:   "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"j\"},\"finish_reason\":\"stop\"}]}\n\n" + done,
			want: []view{
				{Index: 1, Content: "j", FinishReason: "stop"},
				doneView(2, completion("j", "", "stop", "", "", nil)),
			},
		},
		{
			name: "[DONE] with surrounding spaces",
			in:   finish("stop") + "data:  [DONE] \n\n",
			want: []view{finished(1, "stop"), doneView(2, completion("", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "choices other than index 0 are ignored",
			in: "data: " + `{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"length"},{"index":0,"delta":{"content":"mine"}}]}` + "\n\n" +
				finish("stop") + done,
			want: []view{content(1, "mine"), finished(2, "stop"), doneView(3, completion("mine", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
	})
}

func TestR13_3_LengthIsTerminalWithoutDone(t *testing.T) {
	t.Parallel()
	lengthErr := "stream incomplete_completion finish=length"
	runCases(t, []streamCase{
		{
			name: "finish length after content",
			in:   openai(`{"content":"Once upon"}`) + finish("length"),
			tail: done,
			want: []view{content(1, "Once upon"), {Index: 2, FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "gpt-4o", ID: "chatcmpl-1"}, Err: lengthErr}},
		},
		{
			name: "content in the length chunk is still counted",
			in:   "data: " + chunkHead + `{"content":"é🙂"},"finish_reason":"length"}]}` + "\n\n",
			tail: usage + done,
			want: []view{{Index: 1, Content: "é🙂", FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "gpt-4o", ID: "chatcmpl-1"}, Err: lengthErr}},
		},
		{
			name: "oMLX length",
			in:   keepAlive + omlx(`{"role":"assistant"}`) + omlx(`{"content":"a"}`) + omlxFinish("length"),
			tail: done,
			want: []view{ka(), empty(1), content(2, "a"), {Index: 3, FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "qwen3", ID: "chatcmpl-7"}, Err: lengthErr}},
		},
		{
			name: "another finish (content_filter) is terminal the same way",
			in:   openai(`{"content":"a"}`) + finish("content_filter"),
			tail: done,
			want: []view{content(1, "a"), {Index: 2, FinishReason: "content_filter", Completion: &chat.Completion{FinishReason: "content_filter", Model: "gpt-4o", ID: "chatcmpl-1"}, Err: "stream incomplete_completion finish=content_filter"}},
		},
	})
}

func TestR13_3_DoneWithoutAcceptedFinishIsProtocolError(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "content then [DONE] without any finish",
			in:   openai(`{"content":"a"}`) + done,
			want: []view{content(1, "a"), {Err: "protocol"}},
		},
		{
			name: "[DONE] alone",
			in:   done,
			want: []view{{Err: "protocol"}},
		},
		{
			name: "finish_reason null everywhere",
			in:   openai(`{"content":"a"}`) + usage + done,
			want: []view{content(1, "a"), empty(2), {Err: "protocol"}},
		},
	})
}

func TestR13_3_EOFBeforeTerminalIsIncomplete(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{name: "empty body", in: "", incomplete: true, want: []view{}},
		{name: "keepalives only", in: keepAlive + keepAlive, incomplete: true, want: []view{ka(), ka()}},
		{
			name:       "content, finish stop, no [DONE]",
			in:         openai(`{"content":"a"}`) + finish("stop"),
			incomplete: true,
			want:       []view{content(1, "a"), finished(2, "stop")},
		},
		{
			name:       "[DONE] without its blank line at EOF is an unfinished event",
			in:         openai(`{"content":"a"}`) + finish("stop"),
			tail:       "data: [DONE]\n",
			incomplete: true,
			want:       []view{content(1, "a"), finished(2, "stop")},
		},
		{
			name:       "cut mid-event",
			in:         openai(`{"content":"a"}`),
			tail:       `data: {"choices":[{"delta":{"content":"b`,
			incomplete: true,
			want:       []view{content(1, "a")},
		},
	})
}

func TestR13_3_EndVerdict(t *testing.T) {
	t.Parallel()
	d := ssechat.New()
	require.True(t, errors.Is(d.End(), ssechat.ErrIncomplete), "End before any byte")
	d.Write([]byte(openai(`{"content":"a"}`) + finish("stop")))
	require.True(t, errors.Is(d.End(), ssechat.ErrIncomplete), "End before [DONE]")
	d.Write([]byte(done))
	require.True(t, d.End() == nil, "End after the Done frame")

	d = ssechat.New()
	d.Write([]byte(`data: {"error":{"message":"boom"}}` + "\n\n"))
	require.True(t, d.End() == nil, "End after an error frame: the frame carries the error")
	assert.True(t, ssechat.ErrIncomplete.Error() != "", "ErrIncomplete has a message")
}

// ---------------------------------------------------------------------------
// R13.2 counts and frame numbering.

func TestR13_2_CountsAreDecodedUTF8Bytes(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "é🙂 is 6 bytes of content and of reasoning",
			in:   openai(`{"reasoning_content":"é🙂"}`) + openai(`{"content":"é🙂"}`) + finish("stop") + done,
			want: []view{reasoning(1, "é🙂"), content(2, "é🙂"), finished(3, "stop"), doneView(4, completion("é🙂", "é🙂", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "escapes count their decoded bytes",
			in:   openai(`{"content":"\u00e9\ud83d\ude42\n"}`) + finish("stop") + done,
			want: []view{content(1, "é🙂\n"), finished(2, "stop"), doneView(3, completion("é🙂\n", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "a lone surrogate escape decodes to U+FFFD (3 bytes)",
			in:   openai(`{"content":"\ud800"}`) + finish("stop") + done,
			want: []view{content(1, "\uFFFD"), finished(2, "stop"), doneView(3, completion("\uFFFD", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
	})
	r := feed([][]byte{[]byte(openai(`{"reasoning_content":"é🙂"}`) + openai(`{"content":"é🙂"}`))})
	assert.Equal(t, codec.Counts{ReasoningBytes: 6, ContentBytes: 6}, r.dec.Observed())
}

func TestR13_2_ObservedIsTheSumOfFrameSemantics(t *testing.T) {
	t.Parallel()
	in := keepAlive + openai(`{"role":"assistant","content":""}`) + openai(`{"reasoning_content":"hm"}`) +
		openai(`{"content":"ab"}`) +
		openai(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`) +
		openai(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`) + finish("tool_calls") + done
	for _, p := range plans([]byte(in)) {
		r := feed(p.writes)
		invariants(t, r)
		require.Equal(t, codec.Counts{ReasoningBytes: 2, ContentBytes: 2, ToolFragments: 2, CompletedToolCalls: 1}, r.dec.Observed(), p.name)
	}
}

func TestR13_6_FrameIndexCountsNonKeepaliveFramesFromOne(t *testing.T) {
	t.Parallel()
	in := keepAlive + openai(`{"content":"a"}`) + openRouterPing + modelKeepalive + openai(`{"content":"b"}`) + finish("stop") + keepAlive + done
	r := feed([][]byte{[]byte(in)})
	var idx []int
	var kas int
	for _, f := range r.frames {
		if f.Keepalive {
			kas++
			assert.Equal(t, 0, f.Index)
			continue
		}
		idx = append(idx, f.Index)
	}
	assert.Equal(t, []int{1, 2, 3, 4}, idx)
	assert.Equal(t, 4, kas)
	// A new decoder (a new attempt) restarts at 1.
	r = feed([][]byte{[]byte(openai(`{"content":"a"}`))})
	require.True(t, len(r.frames) == 1, "frames: %d", len(r.frames))
	assert.Equal(t, 1, r.frames[0].Index)
}

// ---------------------------------------------------------------------------
// R13.7 reasoning and R13.4 tool calls.

func TestR13_7_ReasoningDeltas(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "oMLX reasoning_content then content",
			in: keepAlive + omlx(`{"role":"assistant"}`) + omlx(`{"reasoning_content":"2+2"}`) + omlx(`{"reasoning_content":"=4"}`) +
				omlx(`{"content":"4"}`) + omlxFinish("stop") + done,
			want: []view{
				ka(), empty(1), reasoning(2, "2+2"), reasoning(3, "=4"), content(4, "4"), finished(5, "stop"),
				doneView(6, completion("4", "2+2=4", "stop", "qwen3", "chatcmpl-7", nil)),
			},
		},
		{
			name: "reasoning (Ollama's OpenAI layer, OpenRouter)",
			in:   openai(`{"role":"assistant","content":"","reasoning":"hm"}`) + openai(`{"content":"ok"}`) + finish("stop") + done,
			want: []view{
				{Index: 1, Reasoning: "hm"}, content(2, "ok"), finished(3, "stop"),
				doneView(4, completion("ok", "hm", "stop", "gpt-4o", "chatcmpl-1", nil)),
			},
		},
		{
			name: "reasoning_content wins over reasoning when a server sends both",
			in:   openai(`{"reasoning_content":"a","reasoning":"a"}`) + finish("stop") + done,
			want: []view{reasoning(1, "a"), finished(2, "stop"), doneView(3, completion("", "a", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "an empty reasoning_content does not hide reasoning",
			in:   openai(`{"reasoning_content":"","reasoning":"r"}`) + finish("stop") + done,
			want: []view{reasoning(1, "r"), finished(2, "stop"), doneView(3, completion("", "r", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "null fields are absent",
			in:   openai(`{"content":null,"reasoning_content":null,"reasoning":null,"tool_calls":null,"function_call":null}`) + finish("stop") + done,
			want: []view{empty(1), finished(2, "stop"), doneView(3, completion("", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
	})
}

func TestR13_4_ToolCallFragmentsAssembleOnlyAtAcceptedEnd(t *testing.T) {
	t.Parallel()
	frag := func(i int, id, name, args string) chat.ToolCallFragment {
		return chat.ToolCallFragment{Index: i, ID: id, Name: name, Arguments: args}
	}
	call := func(id, name, args string) chat.ToolCall {
		return chat.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	runCases(t, []streamCase{
		{
			name: "OpenAI fragments by index, parallel calls",
			in: openai(`{"role":"assistant","content":null}`) +
				openai(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`) +
				openai(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`) +
				openai(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\""}}]}`) +
				openai(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Tokyo\"}"}}]}`) +
				openai(`{"tool_calls":[{"index":1,"function":{"arguments":":\"JST\"}"}}]}`) +
				finish("tool_calls") + done,
			want: []view{
				empty(1),
				{Index: 2, Fragments: []chat.ToolCallFragment{frag(0, "call_1", "get_weather", "")}},
				{Index: 3, Fragments: []chat.ToolCallFragment{frag(0, "", "", `{"city":`)}},
				{Index: 4, Fragments: []chat.ToolCallFragment{frag(1, "call_2", "get_time", `{"tz"`)}},
				{Index: 5, Fragments: []chat.ToolCallFragment{frag(0, "", "", `"Tokyo"}`)}},
				{Index: 6, Fragments: []chat.ToolCallFragment{frag(1, "", "", `:"JST"}`)}},
				finished(7, "tool_calls"),
				doneView(8, completion("", "", "tool_calls", "gpt-4o", "chatcmpl-1", nil,
					call("call_1", "get_weather", `{"city":"Tokyo"}`), call("call_2", "get_time", `{"tz":"JST"}`))),
			},
		},
		{
			name: "oMLX whole calls, one chunk each",
			in: keepAlive + omlx(`{"role":"assistant"}`) +
				omlx(`{"tool_calls":[{"index":0,"id":"call_abcdefgh","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]}`) +
				omlx(`{"tool_calls":[{"index":1,"id":"call_ijklmnop","type":"function","function":{"name":"b","arguments":"{}"}}]}`) +
				omlxFinish("tool_calls") + done,
			want: []view{
				ka(), empty(1),
				{Index: 2, Fragments: []chat.ToolCallFragment{frag(0, "call_abcdefgh", "a", `{"x":1}`)}},
				{Index: 3, Fragments: []chat.ToolCallFragment{frag(1, "call_ijklmnop", "b", `{}`)}},
				finished(4, "tool_calls"),
				doneView(5, completion("", "", "tool_calls", "qwen3", "chatcmpl-7", nil,
					call("call_abcdefgh", "a", `{"x":1}`), call("call_ijklmnop", "b", `{}`))),
			},
		},
		{
			name: "two fragments in one delta",
			in: openai(`{"tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{}"}},{"index":1,"id":"c1","function":{"name":"b","arguments":"[]"}}]}`) +
				finish("tool_calls") + done,
			want: []view{
				{Index: 1, Fragments: []chat.ToolCallFragment{frag(0, "c0", "a", "{}"), frag(1, "c1", "b", "[]")}},
				finished(2, "tool_calls"),
				doneView(3, completion("", "", "tool_calls", "gpt-4o", "chatcmpl-1", nil, call("c0", "a", "{}"), call("c1", "b", "[]"))),
			},
		},
		{
			name: "arguments that are not JSON are kept as a JSON string",
			in:   openai(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}`) + finish("tool_calls") + done,
			want: []view{
				{Index: 1, Fragments: []chat.ToolCallFragment{frag(0, "c", "f", `{"a":`)}},
				finished(2, "tool_calls"),
				doneView(3, completion("", "", "tool_calls", "gpt-4o", "chatcmpl-1", nil, call("c", "f", `"{\"a\":"`))),
			},
		},
		{
			name: "content and a tool call, finish stop",
			in: openai(`{"content":"Let me check."}`) +
				openai(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}`) + finish("stop") + done,
			want: []view{
				content(1, "Let me check."),
				{Index: 2, Fragments: []chat.ToolCallFragment{frag(0, "c", "f", "{}")}},
				finished(3, "stop"),
				doneView(4, completion("Let me check.", "", "stop", "gpt-4o", "chatcmpl-1", nil, call("c", "f", "{}"))),
			},
		},
		{
			name: "fragments before a length finish never complete",
			in: openai(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\""}}]}`) +
				finish("length"),
			tail: done,
			want: []view{
				{Index: 1, Fragments: []chat.ToolCallFragment{frag(0, "c", "f", `{"a"`)}},
				{Index: 2, FinishReason: "length", Completion: &chat.Completion{FinishReason: "length", Model: "gpt-4o", ID: "chatcmpl-1"}, Err: "stream incomplete_completion finish=length"},
			},
		},
	})
}

func TestR14_2_LegacyFunctionCallDeltasAreFragments(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{{
		name: "function_call name then arguments, finish function_call",
		in: openai(`{"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":""}}`) +
			openai(`{"function_call":{"arguments":"{\"city\":"}}`) +
			openai(`{"function_call":{"arguments":"\"Paris\"}"}}`) +
			finish("function_call") + done,
		want: []view{
			{Index: 1, Fragments: []chat.ToolCallFragment{{Name: "get_weather"}}},
			{Index: 2, Fragments: []chat.ToolCallFragment{{Arguments: `{"city":`}}},
			{Index: 3, Fragments: []chat.ToolCallFragment{{Arguments: `"Paris"}`}}},
			finished(4, "function_call"),
			doneView(5, completion("", "", "function_call", "gpt-4o", "chatcmpl-1", nil,
				chat.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)})),
		},
	}})
}

// ---------------------------------------------------------------------------
// R14.2 keepalives, escapes, whitespace and look-alikes.

func TestR14_2_KeepalivesHaveNoSemantics(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "comment keepalives and a model:keepalive chunk",
			in: keepAlive + openRouterPing + modelKeepalive + openai(`{"content":"a"}`) + keepAlive + finish("stop") +
				modelKeepalive + done,
			// The keepalive chunk's "model" is not the answering model.
			want: []view{ka(), ka(), ka(), content(1, "a"), ka(), finished(2, "stop"), ka(),
				doneView(3, completion("a", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "a comment with other fields, stray blank lines, an event name only",
			in:   "\n\n: ping\n: ping\n\n" + "event: ping\n\n" + `data: {"choices":[]}` + "\n\n" + "data: \n\n" + "data:\n\n",
			want: []view{ka(), ka(), ka(), ka(), ka()},

			incomplete: true,
		},
		{
			name:       "an id or retry field alone",
			in:         "id: 7\n\nretry: 1000\n\n",
			want:       []view{ka(), ka()},
			incomplete: true,
		},
	})
}

func TestR14_2_EscapedKeysAreDecoded(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "con\\u0074ent is content",
			in:   `data: {"\u0063hoices":[{"delta":{"con\u0074ent":"hi","reasoning\u005fcontent":"r"},"finish\u005freason":"stop"}]}` + "\n\n" + done,
			want: []view{{Index: 1, Content: "hi", Reasoning: "r", FinishReason: "stop"}, doneView(2, completion("hi", "r", "stop", "", "", nil))},
		},
		{
			name: "escaped tool_calls and function keys",
			in:   `data: {"choices":[{"delta":{"tool\u005fcalls":[{"\u0069ndex":0,"id":"c","\u0066unction":{"n\u0061me":"f","argument\u0073":"{}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" + done,
			want: []view{
				{Index: 1, Fragments: []chat.ToolCallFragment{{ID: "c", Name: "f", Arguments: "{}"}}, FinishReason: "tool_calls"},
				doneView(2, completion("", "", "tool_calls", "", "", nil, chat.ToolCall{ID: "c", Name: "f", Arguments: json.RawMessage("{}")})),
			},
		},
		{
			name: "keys that differ only in case are other keys",
			in:   `data: {"choices":[{"delta":{"Content":"no","TOOL_CALLS":[{"function":{"name":"f"}}],"content":"yes"}}]}` + "\n\n",
			want: []view{content(1, "yes")}, incomplete: true,
		},
		{
			name: "an Error key is not an error",
			in:   `data: {"Error":{"message":"no"},"choices":[{"delta":{"content":"a"}}]}` + "\n\n",
			want: []view{content(1, "a")}, incomplete: true,
		},
		{
			name: "a duplicate key: the last one counts, as in encoding/json",
			in:   `data: {"choices":[{"delta":{"content":"first","content":"last"}}]}` + "\n\n",
			want: []view{content(1, "last")}, incomplete: true,
		},
	})
}

func TestR14_2_WhitespacePrefixedDataLinesAreDecoded(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "spaces and a tab before data:, no space after it",
			in: "  data: " + chunkHead + `{"content":"a"}}]}` + "\n\n" +
				"\tdata:" + chunkHead + `{"content":"b"}}]}` + "\n\n" +
				"   data:  " + chunkHead + `{"content":"c"},"finish_reason":"stop"}]}` + "\n\n" +
				"  data: [DONE]\n\n",
			want: []view{content(1, "a"), content(2, "b"), {Index: 3, Content: "c", FinishReason: "stop"},
				doneView(4, completion("abc", "", "stop", "gpt-4o", "chatcmpl-1", nil))},
		},
		{
			name: "whitespace inside the JSON",
			in:   "data: { \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } , \"finish_reason\" : \"stop\" } ] }\n\n" + done,
			want: []view{{Index: 1, Content: "a", FinishReason: "stop"}, doneView(2, completion("a", "", "stop", "", "", nil))},
		},
	})
}

func TestR14_2_QuotedLookAlikesAreContent(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "tool_calls inside content",
			in:   `data: {"choices":[{"delta":{"content":"quoted \"tool_calls\": ["}}]}` + "\n\n",
			want: []view{content(1, `quoted "tool_calls": [`)}, incomplete: true,
		},
		{
			name: "an error object and [DONE] inside content",
			in: `data: {"choices":[{"delta":{"content":"{\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"content":": keep-alive"},"finish_reason":"stop"}]}` + "\n\n" + done,
			want: []view{
				content(1, "{\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n"),
				{Index: 2, Content: ": keep-alive", FinishReason: "stop"},
				doneView(3, completion("{\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n: keep-alive", "", "stop", "", "", nil)),
			},
		},
		{
			name: "a finish_reason look-alike in content does not finish",
			in:   `data: {"choices":[{"delta":{"content":"\"finish_reason\":\"length\""}}]}` + "\n\n" + done,
			want: []view{content(1, `"finish_reason":"length"`), {Err: "protocol"}},
		},
	})
}

// ---------------------------------------------------------------------------
// R4.7 in-band provider errors and R4.5 malformed events.

func TestR4_7_InBandErrorsEndTheStream(t *testing.T) {
	t.Parallel()
	runCases(t, []streamCase{
		{
			name: "oMLX error then [DONE]",
			in:   keepAlive + omlx(`{"content":"a"}`) + `data: {"error":{"message":"Internal server error","type":"server_error"}}` + "\n\n",
			tail: done,
			want: []view{ka(), content(1, "a"), {Index: 2, Err: "provider code= message=Internal server error"}},
		},
		{
			name: "OpenAI error with a string code",
			in:   `data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":"server_error"}}` + "\n\n",
			tail: openai(`{"content":"after"}`) + finish("stop") + done,
			want: []view{{Index: 1, Err: "provider code=server_error message=The server had an error"}},
		},
		{
			name: "OpenRouter error with finish_reason error in the same chunk",
			in: openai(`{"content":"a"}`) +
				`data: {"id":"cmpl-1","object":"chat.completion.chunk","model":"m","provider":"openai","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":"zz"},"finish_reason":"error"}]}` + "\n\n",
			tail: done,
			want: []view{content(1, "a"), {Index: 2, Err: "provider code=server_error message=Provider disconnected"}},
		},
		{
			name: "a numeric code is not kept",
			in:   `data: {"error":{"message":"m","code":500}}` + "\n\n",
			want: []view{{Index: 1, Err: "provider code= message=m"}},
		},
		{
			name: "error as a string",
			in:   `data: {"error":"overloaded"}` + "\n\n",
			want: []view{{Index: 1, Err: "provider code= message=overloaded"}},
		},
		{
			name: "vLLM object:error",
			in:   `data: {"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}` + "\n\n",
			tail: done,
			want: []view{{Index: 1, Err: "provider code= message=bad"}},
		},
		{
			name: "event: error with a JSON error",
			in:   openai(`{"content":"a"}`) + "event: error\n" + `data: {"error":{"message":"m","code":"rate_limit_exceeded"}}` + "\n\n",
			tail: done,
			want: []view{content(1, "a"), {Index: 2, Err: "provider code=rate_limit_exceeded message=m"}},
		},
		{
			name: "event: error with text data",
			in:   "event: error\ndata: upstream went away\n\n",
			tail: done,
			want: []view{{Index: 1, Err: "provider code= message="}},
		},
		{
			name: "event: error without data",
			in:   "event: error\n\n",
			tail: openai(`{"content":"a"}`) + finish("stop") + done,
			want: []view{{Index: 1, Err: "provider code= message="}},
		},
		{
			name: "event: error with [DONE] data",
			in:   finish("stop") + "event: error\ndata: [DONE]\n\n",
			want: []view{finished(1, "stop"), {Index: 2, Err: "provider code= message="}},
		},
		{
			name: "error: null is no error",
			in:   `data: {"error":null,"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}` + "\n\n" + done,
			want: []view{{Index: 1, Content: "a", FinishReason: "stop"}, doneView(2, completion("a", "", "stop", "", "", nil))},
		},
	})
}

func TestR4_5_MalformedEventsEndTheStream(t *testing.T) {
	t.Parallel()
	after := openai(`{"content":"after"}`) + finish("stop") + done
	runCases(t, []streamCase{
		{name: "truncated JSON", in: openai(`{"content":"a"}`) + `data: {"choices":[{"delta":{"content":"b"` + "\n\n", tail: after,
			want: []view{content(1, "a"), {Err: "protocol"}}},
		{name: "a bare word (an unprefixed OpenRouter comment)", in: "data: OPENROUTER PROCESSING\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "invalid UTF-8 in a string", in: "data: {\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "invalid UTF-8 outside strings", in: "data: {\"choices\":[]}\xc3\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "null", in: "data: null\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "an array", in: "data: []\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "a number", in: "data: 5\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "two objects", in: "data: {} {}\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "content is not a string", in: `data: {"choices":[{"delta":{"content":5}}]}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "choices is not an array", in: `data: {"choices":{}}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "finish_reason is not a string", in: `data: {"choices":[{"delta":{},"finish_reason":1}]}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "tool call index is not an integer", in: `data: {"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "usage is not an object", in: `data: {"choices":[],"usage":7}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
		{name: "model is not a string", in: `data: {"model":7,"choices":[]}` + "\n\n", tail: after, want: []view{{Err: "protocol"}}},
	})
}

func TestR4_5_OversizedEventIsProtocolError(t *testing.T) {
	t.Parallel()
	d := ssechat.New()
	d.Write([]byte(openai(`{"content":"a"}`)))
	big := bytes.Repeat([]byte("x"), 8<<20+1)
	d.Write([]byte(`data: {"choices":[{"delta":{"content":"`))
	d.Write(big)
	var fs []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		fs = append(fs, f)
	}
	require.True(t, len(fs) == 2, "frames: %d", len(fs))
	assert.Equal(t, "a", fs[0].Content)
	assert.True(t, isProtocol(fs[1].Err), "want a ProtocolError, got %v", fs[1].Err)
	assert.True(t, d.End() == nil, "End() = %v", d.End())
	d.Write([]byte("\n\n" + done))
	_, ok := d.Next()
	assert.True(t, !ok, "nothing after the error")
}

// ---------------------------------------------------------------------------
// Raw bytes.

func TestR12_2_RawIsExactAndOwned(t *testing.T) {
	t.Parallel()
	in := []byte("\n" + keepAlive + openai(`{"content":"a"}`) + "\r\n" + finish("stop") + done)
	buf := bytes.Clone(in)
	d := ssechat.New()
	d.Write(buf)
	clear(buf) // the decoder must not retain the caller's buffer
	var fs []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		fs = append(fs, f)
	}
	require.True(t, len(fs) == 4, "frames: %d", len(fs))
	assert.Equal(t, string(in), string(concatRaw(fs)))
	assert.Equal(t, "\n"+keepAlive, string(fs[0].Raw), "a stray blank line joins the next frame")
	// Raw is owned: appending to or overwriting one frame's Raw changes no
	// other frame, and no later frame.
	for _, f := range fs {
		assert.Equal(t, len(f.Raw), cap(f.Raw), "Raw has no spare capacity to append into")
	}
	want := string(fs[1].Raw)
	_ = append(fs[0].Raw, "garbage"...)
	for i := range fs[0].Raw {
		fs[0].Raw[i] = 'X'
	}
	assert.Equal(t, want, string(fs[1].Raw))
	d2 := ssechat.New()
	d2.Write([]byte(keepAlive))
	f, ok := d2.Next()
	require.True(t, ok, "a frame")
	assert.Equal(t, keepAlive, string(f.Raw), "another decoder's keepalive is unaffected")
}

// With DiscardText the decoder returns the same frames, counts and terminal
// Completion, except that the Completion's Content and Reasoning are empty:
// the text is not accumulated (a drop-in stream, codec.RequestInfo.DropText).
func TestDiscardTextKeepsAllButTheAccumulatedText(t *testing.T) {
	t.Parallel()
	stream := openai(`{"role":"assistant","content":""}`) + openai(`{"reasoning_content":"think"}`) +
		keepAlive + openai(`{"content":"Hel"}`) + openai(`{"content":"lo"}`) +
		openai(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`) +
		finish("tool_calls") + usage + done
	decode := func(discard bool) ([]codec.Frame, codec.Counts) {
		d := ssechat.NewFor(codec.RequestInfo{Operation: codec.Streaming, DropText: discard})
		d.Write([]byte(stream))
		var fs []codec.Frame
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			fs = append(fs, f)
		}
		require.NoError(t, d.End())
		return fs, d.Observed()
	}
	kept, keptCounts := decode(false)
	dropped, droppedCounts := decode(true)
	require.False(t, keptCounts != droppedCounts, "counts %+v, want %+v", droppedCounts, keptCounts)
	last := kept[len(kept)-1]
	require.False(t, !last.Done || last.Completion.Message.Content != "Hello" || last.Completion.Message.Reasoning != "think", "terminal frame without DiscardText: %+v", last)
	want := *last.Completion
	want.Message.Content, want.Message.Reasoning = "", ""
	kept[len(kept)-1].Completion = &want
	require.True(t, reflect.DeepEqual(views(kept), views(dropped)), "frames with DiscardText\n%+v\nwant\n%+v", views(dropped), views(kept))
	for i := range kept {
		require.True(t, bytes.Equal(kept[i].Raw, dropped[i].Raw), "frame %d Raw %q, want %q", i, dropped[i].Raw, kept[i].Raw)
	}
}

// With TypedFrames (a native stream, whose consumer never reads bytes) the
// decoder returns the same frames with Raw only on error frames.
func TestTypedFramesKeepRawOnErrorFramesOnly(t *testing.T) {
	t.Parallel()
	for _, stream := range []string{
		keepAlive + openai(`{"content":"Hel"}`) + openai(`{"content":"lo"}`) + finish("stop") + usage + done,
		openai(`{"content":"Hel"}`) + `data: {"error":{"message":"boom","code":"server_error"}}` + "\n\n",
		openai(`{"content":"Hel"}`) + "data: {not json}\n\n",
	} {
		decode := func(typed bool) []codec.Frame {
			d := ssechat.NewFor(codec.RequestInfo{Operation: codec.Streaming, TypedFrames: typed})
			d.Write([]byte(stream))
			var fs []codec.Frame
			for f, ok := d.Next(); ok; f, ok = d.Next() {
				fs = append(fs, f)
			}
			return fs
		}
		all, typed := decode(false), decode(true)
		require.Equal(t, views(all), views(typed), "frames with TypedFrames")
		for i, f := range typed {
			if f.Err != nil {
				require.Equal(t, all[i].Raw, f.Raw, "error frame %d keeps its Raw", i)
			} else {
				require.Nil(t, f.Raw, "frame %d keeps no Raw", i)
			}
		}
	}
}
