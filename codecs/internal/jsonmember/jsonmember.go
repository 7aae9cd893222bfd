// Package jsonmember replaces one top-level member of a JSON object in
// place, leaving every other byte of the document as it was.
package jsonmember

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrNotObject is returned for a document that is not one JSON object.
var ErrNotObject = errors.New("jsonmember: the body is not a JSON object")

// SetString returns a copy of doc whose top-level member key has the
// string value v: every occurrence of key at the top level is replaced,
// and when there is none the member is added first. The rest of doc is
// kept byte for byte. doc is never modified; a document that is not one
// valid JSON object is ErrNotObject.
func SetString(doc []byte, key, v string) ([]byte, error) {
	val, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ErrNotObject
	}
	open := int(dec.InputOffset())
	type span struct{ from, to int }
	var spans []span
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, ErrNotObject
		}
		name, ok := t.(string)
		if !ok {
			return nil, ErrNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, ErrNotObject
		}
		end := int(dec.InputOffset())
		if name == key {
			spans = append(spans, span{end - len(raw), end})
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, ErrNotObject
	}
	if _, err := dec.Token(); err == nil {
		return nil, ErrNotObject // a second document after the object
	}
	out := make([]byte, 0, len(doc)+len(val)+len(key)+4)
	if len(spans) == 0 {
		k, _ := json.Marshal(key)
		out = append(out, doc[:open]...)
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, val...)
		if bytes.TrimSpace(doc[open:])[0] != '}' {
			out = append(out, ',')
		}
		return append(out, doc[open:]...), nil
	}
	last := 0
	for _, s := range spans {
		out = append(out, doc[last:s.from]...)
		out = append(out, val...)
		last = s.to
	}
	return append(out, doc[last:]...), nil
}
