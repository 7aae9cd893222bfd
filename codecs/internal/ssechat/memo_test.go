package ssechat

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// members renders every slice m holds, for comparing two scans' results.
func members(m *topMembers) string {
	c := m.c0
	return fmt.Sprintf("%q %q %q %q %q %q %q %q %v %v %d %q | %q %q %q %v %q %q %q %q %q",
		m.id, m.model, m.err, m.object, m.code, m.message, m.choices, m.usage,
		m.elemsOK, m.c0OK, m.nElems, m.elems[:m.nElems],
		c.index, c.delta, c.finish, c.deltaScanned, c.content, c.rc, c.r, c.tools, c.fc)
}

// TestScanMemo checks that the memo spares the scan of a chunk that differs
// from the last one only in its content string, with exactly the members a
// scan finds, and that it declines every other chunk.
func TestScanMemo(t *testing.T) {
	head := `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":`
	tail := `},"logprobs":null,"finish_reason":null}],"usage":null} `
	first := []byte(head + `"one"` + tail)
	for _, tc := range []struct {
		content string
		reused  bool
	}{
		{`"two, longer"`, true},
		{`""`, true},
		{`"\u00e9\"\\"`, true},
		{`"a","content":"b"`, false}, // two values where the string was
		{`null`, false},
		{`"unterminated`, false},
		{`"\x"`, false},
	} {
		var memo scanMemo
		var m0 topMembers
		require.True(t, m0.scan(first), "the first chunk does not scan")
		memo.keep(first, &m0)
		data := []byte(head + tc.content + tail)
		var got topMembers
		require.Equal(t, tc.reused, memo.reuse(data, &got), "%s: reuse", tc.content)
		if !tc.reused {
			continue
		}
		var want topMembers
		require.True(t, want.scan(data), "%s: reused, but the scan refuses it", tc.content)
		require.Equal(t, members(&want), members(&got), "%s: reused members against scanned", tc.content)
	}
	// Different bytes before or after the string, or a content that is not
	// a string, leave nothing to reuse.
	var memo scanMemo
	var m topMembers
	for _, doc := range []string{head + `null` + tail, `{"choices":[{"delta":{}}]}`} {
		m = topMembers{}
		require.True(t, m.scan([]byte(doc)), "%s does not scan", doc)
		memo.keep([]byte(doc), &m)
		require.False(t, memo.ok, "%s: kept, without a string content", doc)
	}
	m = topMembers{}
	_ = m.scan(first)
	memo.keep(first, &m)
	for _, doc := range []string{
		`{"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"x"` + tail,
		head + `"x"},"logprobs":null,"finish_reason":"stop"}],"usage":null} `,
		head + `"x"` + tail[:len(tail)-1],
	} {
		require.False(t, memo.reuse([]byte(doc), &m), "%s: reused", doc)
	}
}
