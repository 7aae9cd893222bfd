package gemini

import (
	"bytes"
	"strconv"

	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
)

// chunk is what the stream decoder reads of one GenerateContentResponse
// event. Its strings are new; its raw values alias the event's data.
type chunk struct {
	parts        []part
	finish       string
	token        string // the first candidate's continuationToken, or ""
	blockReason  string
	model, id    string
	usage        *wireUsage
	errv         []byte // a raw "error" object, or nil
	hasCandidate bool
}

// part is one part of the first candidate's content.
type part struct {
	text, callID, callName string
	args                   []byte
	thought, hasText, call bool
}

// schemaError is parseChunk's failure: the event's data does not match
// the GenerateContentResponse schema. It quotes nothing.
type schemaError struct{ what string }

func (e *schemaError) Error() string { return "gemini: " + e.what }

// parseChunk reads data, one valid JSON object, as a
// GenerateContentResponse without encoding/json: members are read in one
// pass, keys matched exactly after unescaping (the last of duplicate keys
// wins), unknown members skipped, and a member of the wrong type (a
// non-string text, a candidates that is not an array, a count that is not
// an integer) is a *schemaError. prevModel and prevID are returned, without
// an allocation, when the event repeats them; the parts are appended to
// parts[:0], whose array the caller may reuse once it is done with them.
func parseChunk(data []byte, prevModel, prevID string, parts []part) (chunk, error) {
	c := chunk{parts: parts[:0]}
	var cands []byte
	m := jsonscan.ObjectMembers(data)
	for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
		var err error
		switch string(k) {
		case "candidates":
			cands = v
		case "modelVersion":
			c.model, err = optStrAs(v, prevModel)
		case "responseId":
			c.id, err = optStrAs(v, prevID)
		case "usageMetadata":
			c.usage, err = parseUsage(v)
		case "error":
			c.errv = nil
			if !isNull(v) {
				if v[0] != '{' {
					return c, &schemaError{"error is not an object"}
				}
				c.errv = v
			}
		case "promptFeedback":
			c.blockReason, err = parseFeedback(v)
		}
		if err != nil {
			return c, err
		}
	}
	if cands == nil || isNull(cands) {
		return c, nil
	}
	if cands[0] != '[' {
		return c, &schemaError{"candidates is not an array"}
	}
	els := jsonscan.ArrayElements(cands)
	first, ok := els.Next()
	if !ok {
		return c, nil
	}
	c.hasCandidate = true
	if isNull(first) {
		return c, nil
	}
	if first[0] != '{' {
		return c, &schemaError{"candidate is not an object"}
	}
	return c, parseCandidate(first, &c)
}

func parseCandidate(v []byte, c *chunk) error {
	var content []byte
	m := jsonscan.ObjectMembers(v)
	for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
		switch string(k) {
		case "content":
			content = v
		case "finishReason":
			s, err := optStr(v)
			if err != nil {
				return err
			}
			c.finish = s
		case "continuationToken":
			s, err := optStr(v)
			if err != nil {
				return err
			}
			c.token = s
		}
	}
	if content == nil || isNull(content) {
		return nil
	}
	if content[0] != '{' {
		return &schemaError{"content is not an object"}
	}
	var parts []byte
	cm := jsonscan.ObjectMembers(content)
	for k, v, ok := cm.NextName(); ok; k, v, ok = cm.NextName() {
		if string(k) == "parts" {
			parts = v
		}
	}
	if parts == nil || isNull(parts) {
		return nil
	}
	if parts[0] != '[' {
		return &schemaError{"parts is not an array"}
	}
	els := jsonscan.ArrayElements(parts)
	for pv, ok := els.Next(); ok; pv, ok = els.Next() {
		if isNull(pv) {
			continue
		}
		if pv[0] != '{' {
			return &schemaError{"part is not an object"}
		}
		p, err := parsePart(pv)
		if err != nil {
			return err
		}
		c.parts = append(c.parts, p)
	}
	return nil
}

func parsePart(v []byte) (part, error) {
	var p part
	m := jsonscan.ObjectMembers(v)
	for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
		var err error
		switch string(k) {
		case "text":
			p.hasText = !isNull(v)
			p.text, err = optStr(v)
		case "thought":
			switch string(v) {
			case "true":
				p.thought = true
			case "false", "null":
				p.thought = false
			default:
				err = &schemaError{"thought is not a boolean"}
			}
		case "functionCall":
			p.call, p.callID, p.callName, p.args = false, "", "", nil
			if isNull(v) {
				break
			}
			if v[0] != '{' {
				return p, &schemaError{"functionCall is not an object"}
			}
			p.call = true
			fm := jsonscan.ObjectMembers(v)
			for fk, fv, ok := fm.NextName(); ok && err == nil; fk, fv, ok = fm.NextName() {
				switch string(fk) {
				case "id":
					p.callID, err = optStr(fv)
				case "name":
					p.callName, err = optStr(fv)
				case "args":
					p.args = fv
				}
			}
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func parseUsage(v []byte) (*wireUsage, error) {
	if isNull(v) {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, &schemaError{"usageMetadata is not an object"}
	}
	u := &wireUsage{}
	m := jsonscan.ObjectMembers(v)
	for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
		var dst *int
		switch string(k) {
		case "promptTokenCount":
			dst = &u.PromptTokenCount
		case "candidatesTokenCount":
			dst = &u.CandidatesTokenCount
		case "thoughtsTokenCount":
			dst = &u.ThoughtsTokenCount
		default:
			continue
		}
		if isNull(v) {
			continue
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return nil, &schemaError{"a token count is not an integer"}
		}
		*dst = n
	}
	return u, nil
}

func parseFeedback(v []byte) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if v[0] != '{' {
		return "", &schemaError{"promptFeedback is not an object"}
	}
	reason := ""
	m := jsonscan.ObjectMembers(v)
	for k, v, ok := m.NextName(); ok; k, v, ok = m.NextName() {
		if string(k) == "blockReason" {
			s, err := optStr(v)
			if err != nil {
				return "", err
			}
			reason = s
		}
	}
	return reason, nil
}

func isNull(v []byte) bool { return string(v) == "null" }

// optStr decodes an optional string: null is "".
func optStr(v []byte) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if len(v) < 2 || v[0] != '"' {
		return "", &schemaError{"a string member is not a string"}
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), nil
	}
	return string(jsonscan.Unquote(make([]byte, 0, len(inner)), v)), nil
}

// optStrAs is optStr that returns prev, without allocating, when v is the
// JSON string prev.
func optStrAs(v []byte, prev string) (string, error) {
	if prev != "" && len(v) == len(prev)+2 && v[0] == '"' && string(v[1:len(v)-1]) == prev {
		return prev, nil
	}
	return optStr(v)
}
