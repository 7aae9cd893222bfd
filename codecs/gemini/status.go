package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/codec"
)

// status is a google.rpc.Status error object as the Gemini API sends it.
type status struct {
	Code    int      `json:"code"`
	Message string   `json:"message"`
	Status  string   `json:"status"`
	Details []detail `json:"details"`
}

// detail is one element of a Status's details: the fields of the detail
// types the codec reads (RetryInfo, QuotaFailure, ErrorInfo).
type detail struct {
	Type       string      `json:"@type"`
	RetryDelay string      `json:"retryDelay"`
	Violations []violation `json:"violations"`
	Reason     string      `json:"reason"`
}

// violation is a QuotaFailure violation.
type violation struct {
	QuotaID     string `json:"quotaId"`
	QuotaMetric string `json:"quotaMetric"`
}

// maxStatusBytes bounds the error bodies parseStatus reads: an error body
// is small, and a larger one is not parsed for hints.
const maxStatusBytes = 1 << 20

// parseStatus reads the {"error":{…}} object of body: a whole error
// document, the one-element array the OpenAI-compatible endpoint sends, or
// an SSE event's "data:" line. ok is false when body holds no error object.
func parseStatus(body []byte) (status, bool) {
	b := bytes.TrimSpace(body)
	if len(b) > maxStatusBytes {
		return status{}, false
	}
	if rest, ok := bytes.CutPrefix(b, []byte("data:")); ok {
		b = bytes.TrimSpace(rest)
	}
	if len(b) > 0 && b[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) != nil || len(arr) == 0 {
			return status{}, false
		}
		b = arr[0]
	}
	var doc struct {
		Error *status `json:"error"`
	}
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &doc) != nil || doc.Error == nil {
		return status{}, false
	}
	return *doc.Error, true
}

// reason returns the reason of the first ErrorInfo detail, or "".
func (s status) reason() string {
	for _, d := range s.Details {
		if strings.HasSuffix(d.Type, ".ErrorInfo") && d.Reason != "" {
			return d.Reason
		}
	}
	return ""
}

// hints reads the RetryInfo delay and a per-day QuotaFailure (R23.2).
func (s status) hints() codec.BodyHints {
	var h codec.BodyHints
	for _, d := range s.Details {
		switch {
		case strings.HasSuffix(d.Type, ".RetryInfo"):
			if v, ok := parseDelay(d.RetryDelay); ok && !h.HasRetryDelay {
				h.RetryDelay, h.HasRetryDelay = v, true
			}
		case strings.HasSuffix(d.Type, ".QuotaFailure"):
			for _, v := range d.Violations {
				if perDay(v.QuotaID) || perDay(v.QuotaMetric) {
					h.QuotaExhausted = true
				}
			}
		}
	}
	return h
}

// perDay reports whether a quota ID or metric names a daily quota.
func perDay(id string) bool {
	return strings.Contains(id, "PerDay") || strings.Contains(id, "Daily") || strings.Contains(id, "per_day")
}

// maxDelay bounds a parsed delay: a larger value is the ceiling's to
// refuse, and it must not overflow.
const maxDelay = 100 * 365 * 24 * time.Hour

// parseDelay parses a google.protobuf.Duration in its JSON form ("58s",
// "34.07s") or a Go duration ("900ms"); a negative, empty or malformed
// value is not a delay.
func parseDelay(s string) (time.Duration, bool) {
	if s == "" || len(s) > 32 {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return min(d, maxDelay), true
}
