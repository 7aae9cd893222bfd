package jsonscan

import (
	"encoding/json"
	"testing"
)

// TestOnceRecordsEachMemberOnce reads every member of valid objects with
// Once: each value it records is the member's raw value, and a repeated key
// ends the walk with -1 instead of recording a second value.
func TestOnceRecordsEachMemberOnce(t *testing.T) {
	for _, tc := range []struct {
		doc      string
		a, b     string
		complete bool
	}{
		{`{"a":1,"b":{"x":[1,2]}}`, `1`, `{"x":[1,2]}`, true},
		{` { "b" : "s\"" , "c" : null , "a" : true } `, `true`, `"s\""`, true},
		{`{"a":1,"a":2}`, `1`, ``, false},
		{`{"c":1}`, ``, ``, true},
	} {
		p := []byte(tc.doc)
		var a, b []byte
		end := ValidObject(p, SkipSpace(p, 0), 0, func(key []byte, _ bool, v int) int {
			switch string(key) {
			case "a":
				return Once(&a, p, v, 1)
			case "b":
				return Once(&b, p, v, 1)
			}
			return SkipValid(p, v, 1)
		})
		if (end >= 0) != tc.complete || string(a) != tc.a || string(b) != tc.b {
			t.Errorf("%s: end %d, a %q, b %q; want complete %v, a %q, b %q", tc.doc, end, a, b, tc.complete, tc.a, tc.b)
		}
	}
	var dst []byte
	if end := Once(&dst, []byte(`[1,`), 0, 0); end != -1 || dst != nil {
		t.Errorf("Once of an invalid value = %d, %q; want -1 and nothing recorded", end, dst)
	}
}

// TestTextDecodesAsEncodingJSON checks Text against encoding/json on
// strings with and without escapes, and that it refuses other values.
func TestTextDecodesAsEncodingJSON(t *testing.T) {
	var scratch []byte
	for _, v := range []string{`""`, `"plain"`, `"a\"b\\c\n\u00e9\ud83d\ude42"`, `"\ud800x"`, `"<think>"`} {
		got, ok := Text([]byte(v), &scratch)
		var want string
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatal(err)
		}
		if !ok || string(got) != want {
			t.Errorf("Text(%s) = %q, %v; want %q", v, got, ok, want)
		}
	}
	for _, v := range []string{``, `1`, `null`, `{"a":"b"}`, `["x"]`} {
		if got, ok := Text([]byte(v), &scratch); ok {
			t.Errorf("Text(%s) = %q, true; want ok=false", v, got)
		}
	}
}

// TestPlainInt checks which raw numbers PlainInt reads.
func TestPlainInt(t *testing.T) {
	for _, tc := range []struct {
		num  string
		want int64
		ok   bool
	}{
		{`0`, 0, true}, {`7`, 7, true}, {`007`, 7, true}, {`123456789012345678`, 123456789012345678, true},
		{`1234567890123456789`, 0, false}, {``, 0, false}, {`-1`, 0, false}, {`1.0`, 0, false},
		{`1e3`, 0, false}, {`"1"`, 0, false},
	} {
		if got, ok := PlainInt([]byte(tc.num)); got != tc.want || ok != tc.ok {
			t.Errorf("PlainInt(%q) = %d, %v; want %d, %v", tc.num, got, ok, tc.want, tc.ok)
		}
	}
}
