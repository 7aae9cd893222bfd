package openaiwire

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// The request readers of the chat completions and Responses codecs read
// bodies through Object and ParseObject; a body of another shape is a
// *codec.ProtocolError naming what it is (R14.1).
func TestR14_1_ObjectReadsMembersByExactKey(t *testing.T) {
	t.Parallel()
	o, err := ParseObject([]byte(`{"model":"m","stream":true,"n":null,"Model":"other"}`), "request")
	require.NoError(t, err)
	assert.True(t, o.Has("model"))
	assert.False(t, o.Has("n"), "null is not present")
	assert.False(t, o.Has("absent"))
	assert.Equal(t, "m", o.Str("model"), "keys match exactly, not case-insensitively")
	assert.Empty(t, o.Str("stream"), "a boolean is not a string")
	var stream bool
	require.NoError(t, o.Get("stream", &stream))
	assert.True(t, stream)
	n := 7
	require.NoError(t, o.Get("n", &n))
	assert.Equal(t, 7, n, "null leaves the value unchanged")
	require.Error(t, o.Get("model", &stream))

	var nilObject Object
	assert.False(t, nilObject.Has("model"))
	require.NoError(t, nilObject.Get("model", &stream))

	for body, want := range map[string]string{
		`[1]`: "request is not a JSON object",
		`"s"`: "request is not a JSON object",
		`{`:   "request is not valid JSON",
	} {
		_, err := ParseObject([]byte(body), "request")
		var pe *codec.ProtocolError
		require.ErrorAs(t, err, &pe, body)
		assert.Equal(t, want, pe.What, body)
	}
	o, err = ParseObject([]byte(`null`), "request")
	require.NoError(t, err)
	assert.Nil(t, o)

	// ParseDocument, for a whole body, also refuses null; it parses an
	// object as ParseObject does.
	for body, want := range map[string]string{
		`null`: "response is not a JSON object",
		`[1]`:  "response is not a JSON object",
		`{`:    "response is not valid JSON",
	} {
		_, err := ParseDocument([]byte(body), "response")
		var pe *codec.ProtocolError
		require.ErrorAs(t, err, &pe, body)
		assert.Equal(t, want, pe.What, body)
	}
	o, err = ParseDocument([]byte(` {"model":"m"} `), "response")
	require.NoError(t, err)
	assert.Equal(t, "m", o.Str("model"))

	// DocumentError reads a provider error only out of a JSON object.
	read := func(top Object) *codec.ProviderError {
		if m := top.Str("message"); m != "" {
			return &codec.ProviderError{Message: m}
		}
		return nil
	}
	assert.Equal(t, &codec.ProviderError{Message: "no"}, DocumentError([]byte(`{"message":"no"}`), read))
	assert.Nil(t, DocumentError([]byte(`{"other":1}`), read))
	assert.Nil(t, DocumentError([]byte(`[{"message":"no"}]`), read))
	assert.Nil(t, DocumentError([]byte(`{"message":"no"`), read))

	// ParseRequest adds RequestHead's reading of model and stream.
	o, model, stream, err := ParseRequest([]byte(`{"model":"m","stream":true}`))
	require.NoError(t, err)
	assert.Equal(t, "m", o.Str("model"))
	assert.Equal(t, "m", model)
	assert.True(t, stream)
	for body, want := range map[string]string{
		`null`:         "request is not a JSON object",
		`{"model":1}`:  "request model is not a string",
		`{"stream":1}`: "request stream is not a boolean",
	} {
		_, _, _, err := ParseRequest([]byte(body))
		var pe *codec.ProtocolError
		require.ErrorAs(t, err, &pe, body)
		assert.Equal(t, want, pe.What, body)
	}

	var pe *codec.ProtocolError
	require.ErrorAs(t, ProtocolError("stream event is not valid UTF-8", nil), &pe)
	assert.Equal(t, "stream event is not valid UTF-8", pe.Err.Error(), "a nil cause is the description")
}

// PlainString is the one decoder of a raw string member: a request body
// may hold invalid UTF-8, which it replaces as encoding/json does, unless
// the caller says the document is valid (R14.1).
func TestR14_1_PlainStringChecksUTF8UnlessTold(t *testing.T) {
	t.Parallel()
	raw := []byte("\"a\xffb\"")
	var want string
	require.NoError(t, json.Unmarshal(raw, &want))
	got, ok := PlainString(raw, false)
	require.True(t, ok)
	assert.Equal(t, want, got)

	got, ok = PlainString([]byte(`"gpt-\u0034o"`), true)
	require.True(t, ok)
	assert.Equal(t, "gpt-4o", got)
	got, ok = PlainString([]byte(`null`), false)
	assert.True(t, ok)
	assert.Empty(t, got)
	_, ok = PlainString([]byte(`12`), false)
	assert.False(t, ok)
	assert.True(t, Absent(nil))
	assert.True(t, IsString([]byte(`""`)))
}

// The checks the Responses codec shares with chat completions say what a
// dialect says, under the name the dialect gives (R14.1, R19.2).
func TestR19_2_DialectChecksNameTheirCodec(t *testing.T) {
	t.Parallel()
	d := Dialect{Provider: codec.OpenAI, Name: "openai responses", KnownRoles: true, AssistantToolCalls: true}
	require.EqualError(t, d.CheckTool(1, &chat.ToolSpec{}), "recourse: openai responses: tool 1: empty name")
	require.EqualError(t, d.CheckTool(0, &chat.ToolSpec{Name: "f", Parameters: json.RawMessage(`{`)}),
		"recourse: openai responses: tool 0: parameters are not valid JSON")
	require.NoError(t, d.CheckTool(0, &chat.ToolSpec{Name: "f"}))
	require.EqualError(t, d.Finite(&chat.Options{TopP: new(math.NaN())}), "recourse: openai responses: TopP is not a finite number")
	require.EqualError(t, (&Dialect{Provider: codec.OpenAI}).CheckTool(2, &chat.ToolSpec{}), "recourse: openai: tool 2: empty name")

	require.EqualError(t, d.CheckRole(&chat.Message{Role: "robot"}), "unknown role")
	require.EqualError(t, d.CheckRole(&chat.Message{Role: chat.System, Images: []chat.Image{{Data: []byte{1}}}}),
		"images are only sent on user messages")
	require.EqualError(t, d.CheckRole(&chat.Message{Role: chat.User, ToolCalls: []chat.ToolCall{{ID: "1"}}}),
		"tool calls are only sent on assistant messages")
	require.NoError(t, (&Dialect{}).CheckRole(&chat.Message{Role: "robot", ToolCalls: []chat.ToolCall{{ID: "1"}}}))

	for raw, want := range map[string]string{``: `{}`, `"{\"a\":1}"`: `{"a":1}`, `"not json"`: `not json`, `{"a":1}`: `{"a":1}`} {
		got, err := d.Arguments(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	_, err := d.Arguments(json.RawMessage(`{`))
	require.EqualError(t, err, "arguments are not valid JSON")
	ids := Dialect{ToolCallIDs: true}
	_, err = ids.CallArguments(&chat.ToolCall{Name: "f"})
	require.EqualError(t, err, "no ID")
	_, err = d.CallArguments(&chat.ToolCall{})
	require.EqualError(t, err, "no name", "without ToolCallIDs only the name is required")
	args, err := ids.CallArguments(&chat.ToolCall{ID: "1", Name: "f"})
	require.NoError(t, err)
	assert.Equal(t, "{}", args)
	strict := Dialect{Objects: true}
	_, err = strict.Arguments(nil)
	require.EqualError(t, err, "arguments are not a JSON object")
	got, err := strict.Arguments(json.RawMessage(`"{}"`))
	require.EqualError(t, err, "arguments are not a JSON object")
	assert.Empty(t, got)

	url, err := d.DataURL(chat.Image{Data: []byte("png")})
	require.NoError(t, err)
	assert.Equal(t, "data:image/png;base64,cG5n", url)

	rf, err := (&Dialect{StrictFalse: true}).ResponseFormat(&chat.Request{Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	require.NotNil(t, rf.JSONSchema)
	assert.Equal(t, "response", rf.JSONSchema.Name)
	require.NotNil(t, rf.JSONSchema.Strict)
	assert.False(t, *rf.JSONSchema.Strict)
}

// An encoded request never aliases the chat.Request it was made from
// (R14.1): CopyPtr copies what it points at.
func TestR14_1_CopyPtrCopies(t *testing.T) {
	t.Parallel()
	assert.Nil(t, CopyPtr[int](nil))
	v := 3
	p := CopyPtr(&v)
	require.NotNil(t, p)
	assert.NotSame(t, &v, p)
	assert.Equal(t, 3, *p)
}

// The chat completions and Responses codecs adapt the sampling controls to
// the model family with one check (R14.1, R19.2).
func TestR14_1_CheckReasoningRefusesWhatTheFamilyDoesNotTake(t *testing.T) {
	t.Parallel()
	d := Dialect{Provider: codec.OpenAI}
	for _, tt := range []struct {
		o         chat.Options
		reasoning bool
		want      string
	}{
		{chat.Options{Temperature: new(0.5), TopP: new(0.5)}, false, ""},
		{chat.Options{ReasoningEffort: "low"}, false, "ReasoningEffort with non-reasoning models"},
		{chat.Options{ReasoningEffort: "high"}, true, ""},
		{chat.Options{Temperature: new(0.5), TopP: new(0.5), ReasoningEffort: "max"}, true, "Temperature with reasoning models"},
		{chat.Options{TopP: new(0.5)}, true, "TopP with reasoning models"},
		{chat.Options{ReasoningEffort: "max"}, true, "ReasoningEffort other than low, medium or high"},
	} {
		err := d.CheckReasoning(&tt.o, tt.reasoning)
		if tt.want == "" {
			require.NoError(t, err)
			continue
		}
		var ue *codec.UnsupportedError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, codec.UnsupportedError{Provider: codec.OpenAI, Control: tt.want}, *ue)
	}
}

// Describe of both OpenAI codecs reads the model and the stream flag, and
// names the operation, the same way (R14.1).
func TestR14_1_RequestHeadAndOperation(t *testing.T) {
	t.Parallel()
	o, err := ParseObject([]byte(`{"model":"m","stream":true}`), "request")
	require.NoError(t, err)
	model, stream, err := RequestHead(o)
	require.NoError(t, err)
	assert.Equal(t, "m", model)
	assert.True(t, stream)
	for body, want := range map[string]string{
		`{"model":1,"stream":"x"}`: "request model is not a string",
		`{"model":"m","stream":1}`: "request stream is not a boolean",
	} {
		o, err := ParseObject([]byte(body), "request")
		require.NoError(t, err)
		_, _, err = RequestHead(o)
		var pe *codec.ProtocolError
		require.ErrorAs(t, err, &pe, body)
		assert.Equal(t, want, pe.What, body)
	}
	assert.Equal(t, codec.Streaming, Operation(true, "json_schema"))
	assert.Equal(t, codec.Structured, Operation(false, "json_object"))
	assert.Equal(t, codec.Structured, Operation(false, "json_schema"))
	assert.Equal(t, codec.Ordinary, Operation(false, "text"))
}

// Both OpenAI endpoints refuse the controls they do not take in one order
// (R14.1, R19.2): TopK, the endpoint's own refusals, ContextLength, Think,
// KeepAlive, a non-finite float, then the model family's checks.
func TestR14_1_CheckSamplingRefusesInOrder(t *testing.T) {
	t.Parallel()
	d := Dialect{Provider: codec.OpenAI}
	all := chat.Options{TopK: new(1), Seed: new(1), ContextLength: new(1), Think: new(true), KeepAlive: "1m",
		Temperature: new(math.NaN()), ReasoningEffort: "low"}
	seed := Control{Name: "Seed", Set: true}
	for _, step := range []struct {
		clear func(*chat.Options)
		want  string
	}{
		{func(*chat.Options) {}, "TopK"},
		{func(o *chat.Options) { o.TopK = nil }, "Seed"},
		{func(o *chat.Options) { seed.Set = false }, "ContextLength"},
		{func(o *chat.Options) { o.ContextLength = nil }, "Think"},
		{func(o *chat.Options) { o.Think = nil }, "KeepAlive"},
		{func(o *chat.Options) { o.KeepAlive = "" }, "recourse: openai: Temperature is not a finite number"},
		{func(o *chat.Options) { o.Temperature = nil }, "ReasoningEffort with non-reasoning models"},
		{func(o *chat.Options) { o.ReasoningEffort = "" }, ""},
	} {
		step.clear(&all)
		asked := 0
		isReasoning := func(model string) bool {
			asked++
			assert.Equal(t, "m", model)
			return false
		}
		_, err := d.CheckSampling(&all, isReasoning, "m", Control{Name: "Stop"}, seed)
		wantAsked := 0
		if !strings.HasPrefix(step.want, "recourse:") && (step.want == "" || strings.HasPrefix(step.want, "ReasoningEffort")) {
			wantAsked = 1
		}
		assert.Equal(t, wantAsked, asked, "the family is asked once, after the other checks pass")
		var ue *codec.UnsupportedError
		switch {
		case step.want == "":
			require.NoError(t, err)
		case errors.As(err, &ue):
			assert.Equal(t, step.want, ue.Control)
			assert.Equal(t, codec.OpenAI, ue.Provider)
		default:
			require.EqualError(t, err, step.want)
		}
	}
}
