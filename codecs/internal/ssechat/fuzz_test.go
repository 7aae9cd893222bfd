package ssechat_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"

	"github.com/stretchr/testify/require"
)

// FuzzDecoder feeds arbitrary bytes to the decoder in one Write and split
// at two fuzzed points (and, for short inputs, one byte at a time) and
// checks that:
//   - the decoder never panics;
//   - every way of writing yields the same frames (Index, Keepalive,
//     Content, Reasoning, fragments, finish reason, Done and Completion, and
//     the error's type and safe fields);
//   - the invariants hold: nothing after an error or Done frame, Observed
//     never decreases and equals the sum of the frames' semantics,
//     keepalives and malformed frames are unnumbered, End is nil exactly
//     after a terminal frame;
//   - the frames' Raw bytes concatenated are a prefix of the input, the same
//     for every split (but for the documented "\r" | "\n" loss at the
//     terminal event).
//
// The seed corpus in testdata/fuzz/FuzzDecoder holds real-shaped streams
// (OpenAI, oMLX, OpenRouter, vLLM; wire-and-peers.md §1.3 and §3).
func FuzzDecoder(f *testing.F) {
	f.Add([]byte(keepAlive+openai(`{"content":"a"}`)+finish("stop")+done), uint16(20), uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		a, b := int(cut1)%(len(data)+1), int(cut2)%(len(data)+1)
		if a > b {
			a, b = b, a
		}
		base := feed([][]byte{data})
		invariants(t, base)
		baseRaw := concatRaw(base.frames)
		require.True(t, bytes.HasPrefix(data, baseRaw), "Raw bytes of all frames are not a prefix of the input:\n raw %q\ninput %q", baseRaw, data)
		check := func(name string, r result) {
			t.Helper()
			invariants(t, r)
			require.Equal(t, views(base.frames), views(r.frames), name)
			require.False(t, (base.end == nil) != (r.end == nil), "%s: End() = %v, one write: %v", name, r.end, base.end)
			raw := concatRaw(r.frames)
			if bytes.Equal(raw, baseRaw) {
				return
			}
			// See the package doc: a "\r" completes the terminal event; the
			// "\n" that follows it in a later Write belongs to no frame.
			require.False(t, !bytes.HasSuffix(baseRaw, []byte("\r\n")) || !bytes.Equal(raw, baseRaw[:len(baseRaw)-1]), "%s: Raw bytes of all frames differ:\n got %q\nwant %q", name, raw, baseRaw)
		}
		check("split", feed([][]byte{data[:a], data[a:b], data[b:]}))
		if len(data) <= 2048 {
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			check("byte at a time", feed(bytewise))
		}
	})
}

// FuzzChunkOracle decodes one fuzzed data event and compares the frame with
// a reference decoding of the same JSON through encoding/json maps (exact
// keys, last duplicate wins), which checks the decoder's own exact-key JSON
// walker. The seed corpus is FuzzDecoder's JSON, one chunk per input.
func FuzzChunkOracle(f *testing.F) {
	for _, s := range []string{
		chunkHead + `{"content":"a"},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"con\u0074ent":"hi","Content":"no","reasoning_content":"","reasoning":"r"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":1,"delta":{"content":"x"}},{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c","function":{"name":"f","arguments":{"a":[1,"}"]}}}]}}]}`,
		`{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{\"a\":"}},"finish_reason":"length"}]}`,
		`{"error":{"message":"m","code":"server_error"}}`,
		`{"object":"error","message":"bad","code":400}`,
		`{"model":"keepalive"}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		` { "choices" : [ { "delta" : { "content" : "\ud83d\ude42\"" } } ] } `,
		// The one-pass scan's bookkeeping: more choices than it records,
		// repeated choices and delta members, a delta that is not an object,
		// a first choice that is not an object.
		`{"choices":[{"index":1},{"index":2},{"index":3},{"index":4},{"index":0,"delta":{"content":"5th"}}]}`,
		`{"choices":[{"delta":{"content":"old"}}],"choices":[{"delta":{"content":"new"},"delta":{"reasoning":"r"}}]}`,
		`{"choices":[{"delta":null,"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":"x"}]}`,
		`{"choices":[1,{"index":0,"delta":{"content":"a"}}]}`,
		`{"choices":[{"index":0,"delta":{"c\u006fntent":"esc","content":"plain"}}]}`,
		`{"choices":[{"delta":{"content":"a","content":"b"}}],"id":null,"model":null,"usage":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.ContainsAny(data, "\r\n") {
			return // one data line
		}
		r := feed([][]byte{[]byte("data: " + string(data) + "\n\n")})
		require.Len(t, r.frames, 1, "frames = %d, want 1", len(r.frames))
		got, want := viewOf(r.frames[0]), oracle(data)
		got.Index, got.Done, got.Completion = 0, false, nil
		require.Equal(t, want, got)
	})
}

// FuzzChunkOracleRepeat is FuzzChunkOracle for a chunk that follows
// another: the decoder remembers the members of a chunk with a string
// content and reuses them for a next chunk that differs only there, and the
// second chunk's frame must still be the oracle's. The seeds are pairs of
// chunks that share all but the content, with a second content that is
// another string, escaped, not a string, not valid, or more than one value.
func FuzzChunkOracleRepeat(f *testing.F) {
	tail := `},"logprobs":null,"finish_reason":null}],"usage":null}`
	first := chunkHead + `{"content":" w1"` + tail
	for _, c := range []string{
		`" w2"`, `""`, `"\u00e9\"\\"`, `"\ud800"`, `null`, `1`, `{}`, `"a","content":"b"`,
		`"a","content":1`, `"a"}},{"index":0,"delta":{"content":"b"`, `"\x"`, `"\u12"`,
		`"unterminated`, `"ctl` + "\t" + `"`, `"a" `, ` "a"`, `"é"`, "\"\x01\"",
	} {
		f.Add([]byte(first), []byte(chunkHead+`{"content":`+c+tail))
	}
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"}}]}  `), []byte(`{"choices":[{"delta":{"content":"bb"}}]}  `))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a","content":"b"}}]}`), []byte(`{"choices":[{"delta":{"content":"a","content":"xyz"}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}`), []byte(`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"cc"}}]}`))
	f.Fuzz(func(t *testing.T, first, data []byte) {
		if bytes.ContainsAny(first, "\r\n") || bytes.ContainsAny(data, "\r\n") {
			return // one data line each
		}
		r := feed([][]byte{[]byte("data: " + string(first) + "\n\ndata: " + string(data) + "\n\n")})
		if len(r.frames) != 2 {
			return // the first chunk ended the stream
		}
		got, want := viewOf(r.frames[1]), oracle(data)
		got.Index, got.Done, got.Completion = 0, false, nil
		require.Equal(t, want, got)
	})
}

// oracle decodes data as the decoder should, with encoding/json maps.
func oracle(data []byte) view {
	type obj = map[string]json.RawMessage
	protocol := view{Err: "protocol"}
	if string(bytes.Trim(data, " \t\r\n")) == "[DONE]" {
		return view{Err: "protocol"} // [DONE] without a finish
	}
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return view{Keepalive: true}
	}
	var top obj
	if !utf8.Valid(data) || json.Unmarshal(data, &top) != nil || top == nil {
		return protocol
	}
	null := func(v json.RawMessage) bool { return v == nil || string(v) == "null" }
	str := func(v json.RawMessage) (string, bool) {
		if null(v) {
			return "", true
		}
		var s string
		return s, json.Unmarshal(v, &s) == nil
	}
	strOr := func(v json.RawMessage) string {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
		return s
	}
	integer := func(v json.RawMessage) (int, bool) {
		if null(v) {
			return 0, true
		}
		n, err := strconv.Atoi(string(v))
		return n, err == nil
	}
	if !null(top["error"]) {
		e := top["error"]
		var m obj
		if s, ok := str(e); ok && e[0] == '"' {
			return view{Err: "provider code= message=" + s}
		}
		if json.Unmarshal(e, &m) == nil && m != nil {
			return view{Err: "provider code=" + strOr(m["code"]) + " message=" + strOr(m["message"])}
		}
		return view{Err: "provider code= message="}
	}
	if s, _ := str(top["object"]); s == "error" {
		return view{Err: "provider code=" + strOr(top["code"]) + " message=" + strOr(top["message"])}
	}
	id, ok1 := str(top["id"])
	_, ok2 := str(top["model"])
	if !ok1 || !ok2 {
		return protocol
	}
	hasUsage := false
	if u := top["usage"]; !null(u) {
		var m obj
		if json.Unmarshal(u, &m) != nil {
			return protocol
		}
		for _, k := range []string{"prompt_tokens", "completion_tokens"} {
			if _, ok := integer(m[k]); !ok {
				return protocol
			}
		}
		hasUsage = true
	}
	var choices []json.RawMessage
	if c := top["choices"]; !null(c) && json.Unmarshal(c, &choices) != nil {
		return protocol
	}
	var v view
	seen := false
	for _, c := range choices {
		if seen {
			continue
		}
		var ch obj
		if json.Unmarshal(c, &ch) != nil || ch == nil {
			return protocol
		}
		idx, ok := integer(ch["index"])
		if !ok {
			return protocol
		}
		if idx != 0 {
			continue
		}
		seen = true
		if v.FinishReason, ok = str(ch["finish_reason"]); !ok {
			return protocol
		}
		if null(ch["delta"]) {
			continue
		}
		var dl obj
		if json.Unmarshal(ch["delta"], &dl) != nil || dl == nil {
			return protocol
		}
		var ok1, ok2, ok3 bool
		var rc, rr string
		v.Content, ok1 = str(dl["content"])
		rc, ok2 = str(dl["reasoning_content"])
		rr, ok3 = str(dl["reasoning"])
		if !ok1 || !ok2 || !ok3 {
			return protocol
		}
		if v.Reasoning = rc; rc == "" {
			v.Reasoning = rr
		}
		function := func(fv json.RawMessage, fr *chat.ToolCallFragment) bool {
			if null(fv) {
				return true
			}
			var fn obj
			if json.Unmarshal(fv, &fn) != nil || fn == nil {
				return false
			}
			var ok bool
			if fr.Name, ok = str(fn["name"]); !ok {
				return false
			}
			if a := fn["arguments"]; !null(a) {
				if s, ok := str(a); ok && bytes.TrimSpace(a)[0] == '"' {
					fr.Arguments = s
				} else {
					fr.Arguments = string(a)
				}
			}
			return true
		}
		var tools []json.RawMessage
		if tv := dl["tool_calls"]; !null(tv) && json.Unmarshal(tv, &tools) != nil {
			return protocol
		}
		for _, tv := range tools {
			var tc obj
			if json.Unmarshal(tv, &tc) != nil || tc == nil {
				return protocol
			}
			var fr chat.ToolCallFragment
			var ok1, ok2 bool
			fr.Index, ok1 = integer(tc["index"])
			fr.ID, ok2 = str(tc["id"])
			if !ok1 || !ok2 || !function(tc["function"], &fr) {
				return protocol
			}
			v.Fragments = append(v.Fragments, fr)
		}
		if fc := dl["function_call"]; !null(fc) {
			var fr chat.ToolCallFragment
			var m obj
			if json.Unmarshal(fc, &m) != nil || m == nil || !function(fc, &fr) {
				return protocol
			}
			v.Fragments = append(v.Fragments, fr)
		}
	}
	if len(choices) == 0 && !hasUsage && id == "" {
		return view{Keepalive: true}
	}
	switch v.FinishReason {
	case "", "stop", "tool_calls", "function_call":
	default:
		v.Err = "stream incomplete_completion finish=" + v.FinishReason
	}
	return v
}
