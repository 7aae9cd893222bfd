package responses

// The output items of a stream: function calls, their arguments as they
// arrive, and the tool calls of the terminal completion.

import (
	"sort"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// outputIndex returns the output_index of an event (0 when absent).
func outputIndex(top openaiwire.Object) (int, bool) {
	var i int
	if err := top.Get("output_index", &i); err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// call returns the call at output index i, creating it.
func (d *StreamDecoder) call(i int) *call {
	if d.calls == nil {
		d.calls = make(map[int]*call)
	}
	c := d.calls[i]
	if c == nil {
		c = &call{}
		d.calls[i] = c
	}
	return c
}

// argumentsDelta decodes response.function_call_arguments.delta: one tool
// fragment carrying a piece of the arguments.
func (d *StreamDecoder) argumentsDelta(top openaiwire.Object, f *codec.Frame) string {
	i, ok := outputIndex(top)
	if !ok {
		return "stream event output_index is not a non-negative integer"
	}
	s, what := d.delta(top)
	if what != "" {
		return what
	}
	d.call(i).args.WriteString(s)
	f.Fragments = []chat.ToolCallFragment{{Index: i, Arguments: s}}
	return ""
}

// item returns the "item" object of an output_item event and its type.
func item(top openaiwire.Object) (openaiwire.Object, string, string) {
	var it openaiwire.Object
	if err := top.Get("item", &it); err != nil || it == nil {
		return nil, "", "stream event item is not an object"
	}
	var typ string
	if err := it.Get("type", &typ); err != nil {
		return nil, "", "stream event item type is not a string"
	}
	return it, typ, ""
}

// itemAdded decodes response.output_item.added: a function_call item
// starts a tool call (a fragment with its call_id and name), a message or
// reasoning item is lifecycle, and any other item (a hosted tool's call) is
// observed as a tool fragment that is not delivered.
func (d *StreamDecoder) itemAdded(top openaiwire.Object, f *codec.Frame) string {
	it, typ, what := item(top)
	if what != "" {
		return what
	}
	switch typ {
	case "message", "reasoning":
		return ""
	case "function_call":
	default:
		d.counts.ToolFragments++
		return ""
	}
	i, ok := outputIndex(top)
	if !ok {
		return "stream event output_index is not a non-negative integer"
	}
	var fr chat.ToolCallFragment
	fr.Index = i
	for _, m := range []struct {
		key string
		dst *string
	}{{"call_id", &fr.ID}, {"name", &fr.Name}, {"arguments", &fr.Arguments}} {
		if err := it.Get(m.key, m.dst); err != nil {
			return "stream function_call " + m.key + " is not a string"
		}
	}
	c := d.call(i)
	c.id, c.name = fr.ID, fr.Name
	c.args.WriteString(fr.Arguments)
	f.Fragments = []chat.ToolCallFragment{fr}
	return ""
}

// itemDone decodes response.output_item.done: the final call_id, name and
// arguments of a function_call item win over what its deltas assembled.
func (d *StreamDecoder) itemDone(top openaiwire.Object) string {
	it, typ, what := item(top)
	if what != "" || typ != "function_call" {
		return what
	}
	i, ok := outputIndex(top)
	if !ok {
		return "stream event output_index is not a non-negative integer"
	}
	var id, name, args string
	for _, m := range []struct {
		key string
		dst *string
	}{{"call_id", &id}, {"name", &name}, {"arguments", &args}} {
		if err := it.Get(m.key, m.dst); err != nil {
			return "stream function_call " + m.key + " is not a string"
		}
	}
	c, known := d.calls[i]
	if !known {
		// A call whose start was never streamed: the done item alone
		// completes it, but it was not observed as a fragment.
		c = d.call(i)
	}
	if id != "" {
		c.id = id
	}
	if name != "" {
		c.name = name
	}
	if it.Has("arguments") {
		c.final, c.hasFinal = args, true
	}
	return ""
}

// toolCalls returns the assembled calls in output order.
func (d *StreamDecoder) toolCalls() []chat.ToolCall {
	idx := make([]int, 0, len(d.calls))
	for i := range d.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var calls []chat.ToolCall
	for _, i := range idx {
		c := d.calls[i]
		args := c.args.String()
		if c.hasFinal {
			args = c.final
		}
		calls = append(calls, chat.ToolCall{ID: c.id, Name: c.name, Arguments: arguments(args)})
	}
	return calls
}
