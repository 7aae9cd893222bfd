package responses

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deltaSeeds are stream events for the fast-path tests: the plain shapes
// the fast path takes and the near misses it must leave to the reference.
var deltaSeeds = []string{
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" w1\"}\n\n",
	"data: {\"type\":\"response.refusal.delta\",\"sequence_number\":6,\"delta\":\"no\"}\n\n",
	"data: {\"type\":\"response.reasoning_text.delta\",\"sequence_number\":7,\"delta\":\"think\"}\n\n",
	"data: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"sum\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\\nb\\u00e9\\ud83d\\ude42\\ud800\\\"\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"\"}\n\n",
	"data: { \"type\" : \"response.output_text.delta\" , \"delta\" : \"x\" , \"obfuscation\" : [1,{\"a\":null}] }\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\",\"delta\":\"b\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"type\":\"response.created\",\"delta\":\"b\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"d\\u0065lta\":\"x\"}\n\n",
	"data: {\"typ\\u0065\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.d\\u0065lta\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":1}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":null}\n\n",
	"data: {\"type\":\"response.output_text.delta\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":-1,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1.0,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1e2,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":null,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":\"1\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":99999999999999999999,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":999999999999999999,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"},\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"response\":null,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"response\":1,\"delta\":\"x\"}\n\n",
	"event: error\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n",
	"event: response.output_text.delta\ndata: {\"type\":\"\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.created\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.custom.delta\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"error\",\"code\":\"c\",\"message\":\"m\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"} {}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\",}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"\xff\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"\\x\"}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"deep\":" + strings.Repeat("[", 600) + strings.Repeat("]", 600) + "}\n\n",
	"data: {\"type\":\"response.output_text.delta\",\ndata: \"delta\":\"two data lines\"}\n\n",
	"data: [DONE]\n\n",
	"data: [1]\n\n",
	"data: null\n\n",
	": keep-alive\n\n",
	"event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":9,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"text\":\"a\\nb\"}\n\n",
	"data: {\"type\":\"response.content_part.added\",\"part\":{\"type\":\"output_text\",\"text\":\"\"},\"delta\":1}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"fc_0\",\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}}\n\n",
	"data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}\n\n",
	"data: {\"type\":\"response.queued\",\"sequence_number\":1}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"sequence_number\":9,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"id\":\"rs_1\"}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"message\",\"type\":\"function_call\",\"call_id\":\"c\"}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"typ\\u0065\":\"function_call\",\"call_id\":\"c\"}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_c\\u0061ll\",\"call_id\":\"c\",\"arguments\":\"{}\"}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":null}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":1}}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":null}\n\n",
	"data: {\"type\":\"response.output_item.done\",\"item\":[]}\n\n",
	"data: {\"type\":\"response.output_item.done\"}\n\n",
}

// argumentSeeds are function call arguments deltas: the plain shapes the
// fast path takes (the first four) and near misses it leaves to the
// reference.
var argumentSeeds = []string{
	"event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":8,\"item_id\":\"fc_0\",\"output_index\":1,\"delta\":\"{\\\"city\\\":\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"\\\"Paris\\\"}\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"no index\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2147483647,\"delta\":\"\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2147483648,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":-1,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1.0,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":null,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":\"1\",\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"output_index\":2,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_\\u0069ndex\":1,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":null}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":{}}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"response\":{\"id\":\"resp_1\"},\"delta\":\"x\"}\n\n",
	"event: error\ndata: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"x\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":3,\"output_index\":1,\"delta\":\"again\"}\n\n",
	"data: {\"type\":\"response.function_call_arguments.done\",\"output_index\":1,\"arguments\":\"{}\"}\n\n",
}

// decoded is what a stream decoder made of its input, for comparison.
type decoded struct {
	Frames   []codec.Frame
	Seqs     []int64
	Observed codec.Counts
	Refused  bool
	Content  string
	Reason   string
	ID       string
	End      string
	// Args are the arguments accumulated per output index.
	Args map[int]string
}

// decodeWith feeds stream to a new decoder whose fast path is on or off
// (reference) and returns what it made of it.
func decodeWith(stream []byte, reference bool) decoded {
	d := NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
	d.reference = reference
	d.Write(stream)
	var out decoded
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		seq, _ := d.FrameSequence()
		out.Frames = append(out.Frames, f)
		out.Seqs = append(out.Seqs, seq)
	}
	out.Observed, out.Refused, out.ID = d.Observed(), d.refused, d.ResponseID()
	out.Content, out.Reason = d.content.String(), d.reason.String()
	for i, c := range d.calls {
		if out.Args == nil {
			out.Args = make(map[int]string)
		}
		out.Args[i] = c.args.String()
	}
	if err := d.End(); err != nil {
		out.End = err.Error()
	}
	return out
}

// checkFast fails unless the decoder with its fast path decodes stream
// exactly as the reference does.
func checkFast(t *testing.T, stream []byte) {
	t.Helper()
	fast, ref := decodeWith(stream, false), decodeWith(stream, true)
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("stream %.120q:\nfast      %+v\nreference %+v", stream, fast, ref)
	}
}

// TestR19_3_FastDeltaPathAgreesWithReference checks that the text delta and
// lifecycle events the decoder reads without encoding/json (fast.go) become exactly
// the frames, evidence, sequence numbers and text the reference path makes
// of them, alone, after a created event and in one stream, and that the
// plain shapes do take the fast path.
func TestR19_3_FastDeltaPathAgreesWithReference(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"model\":\"m\"}}\n\n"
	for _, s := range deltaSeeds {
		checkFast(t, []byte(s))
		checkFast(t, []byte(created+s))
	}
	checkFast(t, []byte(created+strings.Join(deltaSeeds, "")))
	for _, s := range argumentSeeds {
		checkFast(t, []byte(s))
		checkFast(t, []byte(created+s))
	}
	// A call's arguments from several deltas, one of them repeated (its
	// sequence number already seen) and one for another call between them.
	checkFast(t, []byte(created+strings.Join(argumentSeeds, "")))
	checkFast(t, []byte(created+strings.Join(argumentSeeds[:4], "")+strings.Join(argumentSeeds, "")))
	var scratch []byte
	plain := append(deltaSeeds[:6:6], deltaSeeds[len(deltaSeeds)-15:len(deltaSeeds)-13]...)
	plain = append(plain, deltaSeeds[len(deltaSeeds)-10:len(deltaSeeds)-8]...)
	plain = append(plain, argumentSeeds[:4]...)
	for _, s := range plain {
		fr := sse.NewFramer(0)
		fr.Write([]byte(s))
		ev, ok, err := fr.Next()
		require.NoError(t, err)
		require.True(t, ok)
		_, _, _, took := fastDelta(ev, &scratch)
		assert.True(t, took, "the plain delta %.60q was left to the reference", s)
	}
}

// TestR19_3_FastDeltaRandomShapes builds many delta events from parts of
// every shape the fast path reads (members of each type, repeats, escaped
// and look-alike keys, odd sequence numbers) and checks that it agrees with
// the reference.
func TestR19_3_FastDeltaRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	for range 5000 {
		var members []string
		for range r.IntN(6) {
			m := pick(
				`"type":`+pick(`"response.output_text.delta"`, `"response.refusal.delta"`, `"response.reasoning_text.delta"`,
					`"response.reasoning_summary_text.delta"`, `"response.created"`, `"x.delta"`, `""`, `1`, `null`,
					`"response.output_text.done"`, `"response.output_item.done"`, `"response.queued"`,
					`"response.function_call_arguments.delta"`),
				`"delta":`+pick(`"x"`, `""`, `"a\nb"`, `"\u00e9\ud83d\ude42"`, `"\ud800"`, `1`, `null`, `{}`),
				`"sequence_number":`+pick(`0`, `7`, `-1`, `1.5`, `2e1`, `null`, `"3"`, `12345678901234567890`),
				`"response":`+pick(`{"id":"resp_2","model":"m2"}`, `null`, `{"id":1}`),
				`"output_index":`+pick(`0`, `3`, `-1`, `1.5`, `null`, `"2"`, `2147483648`), `"item_id":"msg_1"`, `"text":"done \u00e9"`,
				`"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
				`"item":{"type":"message","content":[]}`, `"item":{"id":"x"}`, `"item":null`, `"item":{"type":"message","type":"function_call"}`, `"d\u0065lta":"y"`, `"Type":"response.output_text.delta"`)
			members = append(members, m)
		}
		ev := pick("", "event: error\n", "event: response.output_text.delta\n") +
			"data: {" + strings.Join(members, ",") + "}" + pick("", " ", "x") + "\n\n"
		checkFast(t, []byte(ev))
	}
}

// FuzzFastDelta checks the fast path against the reference on any stream.
func FuzzFastDelta(f *testing.F) {
	for _, s := range append(deltaSeeds, argumentSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) { checkFast(t, stream) })
}
