package ssechat

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// chunk decodes a data event that should hold a chat.completion.chunk.
// It is one function of more than 100 lines because its checks follow
// the precedence of a chunk's verdicts (UTF-8, JSON, error, fields,
// choices, usage) in reading order, each early return ending the chunk.
func (d *Decoder) chunk(raw, data []byte) {
	if !utf8.Valid(data) {
		d.push(protocolError(raw, "stream event is not valid UTF-8", nil))
		return
	}
	var m topMembers
	if d.memo.reuse(data, &m) {
		// Same bytes as the last chunk but for its content string: the
		// same verdict and the same members.
	} else if m.scan(data) {
		d.memo.keep(data, &m)
	} else {
		// Not an object of plain keys that jsonscan validates: the
		// reference path decides (encoding/json's verdict, keys unescaped).
		if !validJSON(data) {
			var v json.RawMessage
			d.push(protocolError(raw, "stream event is not valid JSON", json.Unmarshal(data, &v)))
			return
		}
		top, ok := object(data)
		if !ok {
			d.push(protocolError(raw, "stream event is not a JSON object", nil))
			return
		}
		m = topMembers{}
		for k, v, ok := top.NextName(); ok; k, v, ok = top.NextName() {
			m.set(k, v)
		}
	}
	idv, modelv, errv, objectv, codev, messagev, choicesv, usagev := m.id, m.model, m.err, m.object, m.code, m.message, m.choices, m.usage
	if errv != nil && !isNull(errv) {
		d.push(codec.Frame{Raw: raw, Err: providerError(errv)})
		return
	}
	if strIs(objectv, "error") {
		// vLLM: {"object":"error","message":…,"type":…,"code":400}.
		d.push(codec.Frame{Raw: raw, Err: &codec.ProviderError{Code: strOr(codev), Message: strOr(messagev)}})
		return
	}
	// The id and model repeat in every chunk: reuse the strings.
	id, ok1 := optStrAs(idv, d.id)
	model, ok2 := optStrAs(modelv, d.model)
	if !ok1 || !ok2 {
		d.push(protocolError(raw, "chunk id or model is not a string", nil))
		return
	}
	u, ok := decodeUsage(usagev)
	if !ok {
		d.push(protocolError(raw, "chunk usage is not an object of integers", nil))
		return
	}
	f := codec.Frame{Raw: raw}
	var frags []chat.ToolCallFragment
	var legacy *chat.ToolCallFragment
	choices, ok := array(choicesv)
	if !ok && choicesv != nil && !isNull(choicesv) {
		d.push(protocolError(raw, "chunk choices is not an array", nil))
		return
	}
	nChoices := 0
	seen := false
	choice := func(c []byte, pre *choiceMembers) bool {
		nChoices++
		if seen {
			return true
		}
		var what string
		seen, what = decodeChoice(c, pre, &f, &frags, &legacy)
		if what != "" {
			d.push(protocolError(raw, what, nil))
			return false
		}
		return true
	}
	if m.elemsOK {
		// The scan recorded the elements, and the first one's members.
		for i, c := range m.elems[:m.nElems] {
			var pre *choiceMembers
			if i == 0 && m.c0OK {
				pre = &m.c0
			}
			if !choice(c, pre) {
				return
			}
		}
	} else {
		for c, ok := choices.Next(); ok; c, ok = choices.Next() {
			if !choice(c, nil) {
				return
			}
		}
	}
	if nChoices == 0 && u == nil && id == "" {
		// {"model":"keepalive"} and other chunks that carry nothing; their
		// model is not the answering model.
		f.Keepalive = true
		d.push(f)
		return
	}
	if model != "" {
		d.model = model
	}
	if id != "" {
		d.id = id
	}
	if u != nil {
		d.usage = u
	}
	f.Fragments = frags
	for _, fr := range frags {
		d.addFragment(fr)
	}
	if legacy != nil {
		f.Fragments = append(f.Fragments, *legacy)
		if d.legacy == nil {
			d.legacy = &chat.ToolCallFragment{}
		}
		d.legacy.Name += legacy.Name
		d.legacy.Arguments += legacy.Arguments
	}
	if f.FinishReason != "" {
		d.finish = f.FinishReason
	}
	if !d.discardText {
		d.content.WriteString(f.Content)
		d.reason.WriteString(f.Reasoning)
	}
	d.counts = d.counts.Add(f.Semantic())
	switch {
	case accepted(f.FinishReason), f.FinishReason == "":
	case d.providerFinish && codec.DocumentedFinish(f.FinishReason):
		// The provider's answer for a drop-in client: [DONE] ends it.
	default:
		// length (and any other finish) is terminal without [DONE] (R13.3).
		// The provider's evidence seen so far (model, id, usage) is kept for
		// Inspect, as an accepted completion's would be; no message, no
		// tool call (R10.5).
		f.Err = &codec.IncompleteError{FinishReason: f.FinishReason}
		f.Completion = &chat.Completion{FinishReason: f.FinishReason, Model: d.model, ID: d.id, Usage: d.usage}
	}
	d.push(f)
}

// choiceMembers are the raw members of a choice object that the decoder
// reads and, when deltaScanned, those of its delta object, as the one-pass
// scan of a chunk records them (of duplicate keys the last one wins).
type choiceMembers struct {
	index, delta, finish      []byte
	deltaScanned              bool
	content, rc, r, tools, fc []byte // of delta
}

// setDelta records the raw value v of the delta member named key.
func (m *choiceMembers) setDelta(key, v []byte) {
	switch string(key) {
	case "content":
		m.content = v
	case "reasoning_content":
		m.rc = v
	case "reasoning":
		m.r = v
	case "tool_calls":
		m.tools = v
	case "function_call":
		m.fc = v
	}
}

// decodeChoice decodes one element of choices into f, frags and legacy when
// its index is 0. It reports whether it did, or what is malformed. pre, when
// not nil, holds c's members as the chunk's scan recorded them.
// It stays one function of more than 100 lines so that the order of its
// checks, which decides which malformation a choice reports, reads top to
// bottom.
func decodeChoice(c []byte, pre *choiceMembers, f *codec.Frame, frags *[]chat.ToolCallFragment, legacy **chat.ToolCallFragment) (used bool, what string) {
	var m choiceMembers
	if pre != nil {
		m = *pre
	} else {
		it, ok := object(c)
		if !ok {
			return false, "chunk choice is not an object"
		}
		for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
			switch string(k) {
			case "index":
				m.index = v
			case "delta":
				m.delta = v
			case "finish_reason":
				m.finish = v
			}
		}
	}
	indexv, deltav, finishv := m.index, m.delta, m.finish
	index, ok := optInt(indexv)
	if !ok {
		return false, "chunk choice index is not an integer"
	}
	if index != 0 {
		return false, "" // only the first choice is decoded (n = 1)
	}
	if f.FinishReason, ok = optStr(finishv); !ok {
		return false, "chunk finish_reason is not a string"
	}
	if deltav == nil || isNull(deltav) {
		return true, ""
	}
	if !m.deltaScanned {
		dl, ok := object(deltav)
		if !ok {
			return false, "chunk delta is not an object"
		}
		for k, v, ok := dl.NextName(); ok; k, v, ok = dl.NextName() {
			m.setDelta(k, v)
		}
	}
	contentv, rcv, rv, toolsv, fcv := m.content, m.rc, m.r, m.tools, m.fc
	var ok1, ok2, ok3 bool
	f.Content, ok1 = optStr(contentv)
	rc, ok2 := optStr(rcv)
	r, ok3 := optStr(rv)
	if !ok1 || !ok2 || !ok3 {
		return false, "chunk content or reasoning is not a string"
	}
	// A server that sends both names sends the same text twice; an empty
	// reasoning_content does not hide reasoning.
	if f.Reasoning = rc; rc == "" {
		f.Reasoning = r
	}
	tools, ok := array(toolsv)
	if !ok && toolsv != nil && !isNull(toolsv) {
		return false, "chunk tool_calls is not an array"
	}
	for tv, ok := tools.Next(); ok; tv, ok = tools.Next() {
		tc, ok := object(tv)
		if !ok {
			return false, "chunk tool call is not an object"
		}
		var ti, tid, tfn []byte
		for k, v, ok := tc.NextName(); ok; k, v, ok = tc.NextName() {
			switch string(k) {
			case "index":
				ti = v
			case "id":
				tid = v
			case "function":
				tfn = v
			}
		}
		var fr chat.ToolCallFragment
		var ok1, ok2 bool
		fr.Index, ok1 = optInt(ti)
		fr.ID, ok2 = optStr(tid)
		if !ok1 || !ok2 {
			return false, "chunk tool call index or id has the wrong type"
		}
		if what := decodeFunction(tfn, &fr); what != "" {
			return false, what
		}
		*frags = append(*frags, fr)
	}
	if fcv != nil && !isNull(fcv) {
		var fr chat.ToolCallFragment
		if _, ok := object(fcv); !ok {
			return false, "chunk function_call is not an object"
		}
		if what := decodeFunction(fcv, &fr); what != "" {
			return false, what
		}
		*legacy = &fr
	}
	return true, ""
}

// decodeFunction decodes {"name":…,"arguments":…} into fr. Arguments that
// are not a string (some compatible servers send an object) are kept as
// their JSON text.
func decodeFunction(v []byte, fr *chat.ToolCallFragment) (what string) {
	if v == nil || isNull(v) {
		return ""
	}
	it, ok := object(v)
	if !ok {
		return "chunk tool call function is not an object"
	}
	var namev, argsv []byte
	for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
		switch string(k) {
		case "name":
			namev = v
		case "arguments":
			argsv = v
		}
	}
	if fr.Name, ok = optStr(namev); !ok {
		return "chunk tool call name is not a string"
	}
	if argsv == nil || isNull(argsv) {
		return ""
	}
	if s, ok := str(argsv); ok {
		fr.Arguments = s
	} else {
		fr.Arguments = string(argsv)
	}
	return ""
}

// decodeUsage decodes a usage value; nil (and ok) when absent or null.
func decodeUsage(v []byte) (*chat.Usage, bool) {
	if v == nil || isNull(v) {
		return nil, true
	}
	it, ok := object(v)
	if !ok {
		return nil, false
	}
	u := &chat.Usage{}
	for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
		var n *int
		switch string(k) {
		case "prompt_tokens":
			n = &u.InputTokens
		case "completion_tokens":
			n = &u.OutputTokens
		default:
			continue
		}
		if *n, ok = optInt(v); !ok {
			return nil, false
		}
	}
	return u, true
}

func (d *Decoder) addFragment(fr chat.ToolCallFragment) {
	if d.calls == nil {
		d.calls = map[int]*chat.ToolCallFragment{}
	}
	acc, ok := d.calls[fr.Index]
	if !ok {
		acc = &chat.ToolCallFragment{Index: fr.Index}
		d.calls[fr.Index] = acc
	}
	if fr.ID != "" {
		acc.ID = fr.ID
	}
	acc.Name += fr.Name
	acc.Arguments += fr.Arguments
}

// accepted reports whether finish is a finish reason [DONE] accepts.
func accepted(finish string) bool {
	return finish == "stop" || finish == "tool_calls" || finish == "function_call"
}

func (d *Decoder) done(raw []byte) {
	comp := &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.reason.String()},
		FinishReason: d.finish, Model: d.model, ID: d.id, Usage: d.usage,
	}
	switch {
	case accepted(d.finish):
	case d.providerFinish && codec.DocumentedFinish(d.finish):
		// A drop-in client's length or content-filter finish: the end the
		// provider sent, whose tool calls are never complete (R13.3, R13.4).
		d.push(codec.Frame{Raw: raw, Done: true, Completion: comp, FinishReason: d.finish})
		return
	default:
		d.push(protocolError(raw, "stream ended without an accepted finish reason", nil))
		return
	}
	idx := make([]int, 0, len(d.calls))
	for i := range d.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		acc := d.calls[i]
		comp.Message.ToolCalls = append(comp.Message.ToolCalls, chat.ToolCall{ID: acc.ID, Name: acc.Name, Arguments: arguments(acc.Arguments)})
	}
	if d.legacy != nil {
		comp.Message.ToolCalls = append(comp.Message.ToolCalls, chat.ToolCall{Name: d.legacy.Name, Arguments: arguments(d.legacy.Arguments)})
	}
	f := codec.Frame{Raw: raw, Done: true, Completion: comp, FinishReason: d.finish}
	d.counts.CompletedToolCalls += int64(len(comp.Message.ToolCalls))
	d.push(f)
}

// validJSON reports whether data is what encoding/json.Valid accepts. The
// allocation-free jsonscan.Valid decides almost every event at a fraction of
// json.Valid's cost; only a document it refuses (invalid, or nested deeper
// than jsonscan.MaxDepth) is asked of json.Valid, so the verdict is
// json.Valid's own.
func validJSON(data []byte) bool { return jsonscan.Valid(data) || json.Valid(data) }

// arguments keeps valid JSON argument text as it is, and wraps anything
// else as a JSON string so that it is never mistaken for an object.
func arguments(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// ---------------------------------------------------------------------------
// Exact-key access to JSON that json.Valid accepted, through jsonscan's
// iterators, which rely on that validation: they never see malformed input.

// object returns an iterator over v's members; ok is false when v is not
// an object (the zero iterator then yields nothing).
func object(v []byte) (jsonscan.Members, bool) {
	v = jsonscan.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return jsonscan.Members{}, false
	}
	return jsonscan.ObjectMembers(v), true
}

// array returns an iterator over v's elements; ok is false when v is not
// an array (the zero iterator then yields nothing).
func array(v []byte) (jsonscan.Elements, bool) {
	v = jsonscan.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return jsonscan.Elements{}, false
	}
	return jsonscan.ArrayElements(v), true
}

// str decodes a JSON string value.
func str(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	return string(jsonscan.Unquote(make([]byte, 0, len(inner)), v)), true
}

// strIs reports whether v is the JSON string s.
func strIs(v []byte, s string) bool {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1:len(v)-1]) == s
	}
	t, ok := str(v)
	return ok && t == s
}

// optStrAs is optStr that returns prev, without allocating, when v is the
// JSON string prev.
func optStrAs(v []byte, prev string) (string, bool) {
	if prev != "" && strIs(v, prev) {
		return prev, true
	}
	return optStr(v)
}

// strOr returns the string value v, or "" when v is anything else.
func strOr(v []byte) string {
	s, _ := str(v)
	return s
}

// optStr decodes an optional string: absent or null is "".
func optStr(v []byte) (string, bool) {
	if v == nil || isNull(v) {
		return "", true
	}
	return str(v)
}

// optInt decodes an optional integer: absent or null is 0.
func optInt(v []byte) (int, bool) {
	if v == nil || isNull(v) {
		return 0, true
	}
	if len(v) == 1 && v[0] >= '0' && v[0] <= '9' {
		return int(v[0] - '0'), true
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}

func isNull(v []byte) bool { return string(v) == "null" }
