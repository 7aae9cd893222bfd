package ssechat

import "github.com/recourse-dev/recourse/codecs/internal/jsonscan"

// topMembers holds the raw values of the top-level members of a chunk that
// the decoder reads; of duplicate keys the last one wins.
type topMembers struct {
	id, model, err, object, code, message, choices, usage []byte
	// elemsOK: the scan recorded the elements of choices (at most
	// maxElems) in elems, and c0OK: the members of the first one, an
	// object, in c0.
	elemsOK, c0OK bool
	nElems        int
	elems         [maxElems][]byte
	c0            choiceMembers
}

// maxElems is the most choices elements a chunk's scan records; a chunk
// with more is walked again.
const maxElems = 4

// set records the raw value v of the member named key (unescaped).
func (m *topMembers) set(key, v []byte) {
	switch string(key) {
	case "id":
		m.id = v
	case "model":
		m.model = v
	case "error":
		m.err = v
	case "object":
		m.object = v
	case "code":
		m.code = v
	case "message":
		m.message = v
	case "choices":
		m.choices = v
	case "usage":
		m.usage = v
	}
}

// scan validates data and records its members in one pass, for the common
// chunk: an object, nested at most jsonscan.MaxDepth deep, with no escaped
// key. It reports false for anything else (m is then to be discarded), and
// the reference path decides. A true result implies what validJSON and
// object would have found.
// It is one function of more than 80 lines because its closures, one per
// nesting level (delta, choice, element, top), share data and m and nest as
// the chunk does, in one pass that runs once a chunk on the stream's fast
// path.
func (m *topMembers) scan(data []byte) bool {
	i := jsonscan.SkipSpace(data, 0)
	delta := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		e := jsonscan.SkipValid(data, v, 4)
		if e >= 0 {
			m.c0.setDelta(key, data[v:e])
		}
		return e
	}
	choice := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		var e int
		switch string(key) {
		case "delta":
			c := &m.c0
			c.deltaScanned, c.content, c.rc, c.r, c.tools, c.fc = false, nil, nil, nil, nil, nil
			if data[v] == '{' {
				e = jsonscan.ValidObject(data, v, 3, delta)
				c.deltaScanned = true
			} else {
				e = jsonscan.SkipValid(data, v, 3)
			}
			if e >= 0 {
				c.delta = data[v:e]
			}
		case "index", "finish_reason":
			if e = jsonscan.SkipValid(data, v, 3); e >= 0 {
				if key[0] == 'i' {
					m.c0.index = data[v:e]
				} else {
					m.c0.finish = data[v:e]
				}
			}
		default:
			e = jsonscan.SkipValid(data, v, 3)
		}
		return e
	}
	elem := func(n, v int) int {
		var e int
		if n == 0 && data[v] == '{' {
			e = jsonscan.ValidObject(data, v, 2, choice)
			m.c0OK = true
		} else {
			e = jsonscan.SkipValid(data, v, 2)
		}
		if e >= 0 {
			if n < maxElems {
				m.elems[n] = data[v:e]
				m.nElems = n + 1
			} else {
				m.elemsOK = false
			}
		}
		return e
	}
	end := jsonscan.ValidObject(data, i, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		var e int
		if string(key) == "choices" {
			// A later choices replaces everything of an earlier one.
			m.nElems, m.c0OK, m.c0 = 0, false, choiceMembers{}
			if data[v] == '[' {
				m.elemsOK = true
				e = jsonscan.ValidArray(data, v, 1, elem)
			} else {
				m.elemsOK = false
				e = jsonscan.SkipValid(data, v, 1)
			}
		} else {
			e = jsonscan.SkipValid(data, v, 1)
		}
		if e >= 0 {
			m.set(key, data[v:e])
		}
		return e
	})
	return end >= 0 && jsonscan.SkipSpace(data, end) == len(data)
}

// scanMemo remembers a chunk that topMembers.scan accepted and whose first
// choice's delta content is a string: doc is a copy of the chunk, m its
// members as slices of doc, and [at, end) the content string's bytes.
//
// Chunks of one stream differ mostly in that string: id, model, the
// choice's index and everything after the text repeat. A chunk that is the
// same bytes as doc but for another valid string at doc[at:end] gets the
// same verdict from scan, and the same members at shifted places: scan's
// every decision rests on the keys and on the first byte of values, and the
// string is a value whose first byte is a quote in both, a complete token
// nested alike, holding no member of its own. reuse checks exactly that
// and so spares the chunk its scan, whose verdict it equals.
type scanMemo struct {
	doc     []byte
	m       topMembers
	at, end int
	ok      bool
}

// maxMemo bounds the chunk a scanMemo copies.
const maxMemo = 4 << 10

// keep remembers data and its members m (slices of data), when data's
// content is a string.
func (s *scanMemo) keep(data []byte, m *topMembers) {
	s.ok = false
	c := m.c0.content
	if !m.c0OK || !m.c0.deltaScanned || len(c) < 2 || c[0] != '"' || len(data) > maxMemo {
		return
	}
	s.doc = append(s.doc[:0], data...)
	s.at = offset(data, c)
	s.end = s.at + len(c)
	s.m = *m
	s.m.remap(data, s.doc, 0, 0)
	s.ok = true
}

// reuse sets m to data's members and reports true when data is the
// remembered chunk with another valid string for its content; it leaves m
// alone and reports false otherwise.
func (s *scanMemo) reuse(data []byte, m *topMembers) bool {
	if !s.ok {
		return false
	}
	tail := len(s.doc) - s.end // the bytes after the content string
	end := len(data) - tail
	if end <= s.at || data[s.at] != '"' ||
		string(data[:s.at]) != string(s.doc[:s.at]) || string(data[end:]) != string(s.doc[s.end:]) {
		return false
	}
	if jsonscan.SkipValid(data, s.at, 4) != end {
		return false // not one valid string, as scan's delta member checks it
	}
	*m = s.m
	m.remap(s.doc, data, s.end, end-s.end)
	m.c0.content = data[s.at:end]
	return true
}

// offset is the index in b of v, a slice of b.
func offset(b, v []byte) int { return cap(b) - cap(v) }

// remap moves m's slices of from to the same places in to, shifting by
// shift each start or end at or after index after.
func (m *topMembers) remap(from, to []byte, after, shift int) {
	mv := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		i := offset(from, v)
		j := i + len(v)
		if i >= after {
			i += shift
		}
		if j >= after {
			j += shift
		}
		return to[i:j] // two indices: offset needs the capacity
	}
	m.id, m.model, m.err, m.object = mv(m.id), mv(m.model), mv(m.err), mv(m.object)
	m.code, m.message, m.choices, m.usage = mv(m.code), mv(m.message), mv(m.choices), mv(m.usage)
	for k := range m.nElems {
		m.elems[k] = mv(m.elems[k])
	}
	c := &m.c0
	c.index, c.delta, c.finish = mv(c.index), mv(c.delta), mv(c.finish)
	c.content, c.rc, c.r, c.tools, c.fc = mv(c.content), mv(c.rc), mv(c.r), mv(c.tools), mv(c.fc)
}
