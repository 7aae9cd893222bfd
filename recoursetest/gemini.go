package recoursetest

import (
	"net/http"
	"strconv"
)

// Values of the canned Gemini bodies.
const (
	// GeminiModel is the model version the canned Gemini bodies name.
	GeminiModel = "gemini-2.5-flash"
)

// geminiUsage is the usageMetadata of the canned Gemini answers: 12 prompt
// and 7 candidate tokens.
const geminiUsage = `"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":7,"totalTokenCount":19}`

// geminiCandidate returns a candidate holding content as its one text part, with
// finish reason finish when it is not empty.
func geminiCandidate(content, finish string) string {
	c := `{"content":{"parts":[{"text":` + marshal(content) + `}],"role":"model"}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	return c + `,"index":0}`
}

// GeminiChat returns a generateContent answer body as the Gemini API sends
// it: one candidate whose one text part is content, finish reason STOP,
// usage 12 + 7 = 19 tokens, model version GeminiModel and response ID
// "resp-1".
func GeminiChat(content string) string {
	return `{"candidates":[` + geminiCandidate(content, "STOP") + `],` + geminiUsage +
		`,"modelVersion":"` + GeminiModel + `","responseId":"resp-1"}`
}

// GeminiStream returns the Server-Sent Events of a
// streamGenerateContent?alt=sse answer, each a whole "data: …\r\n\r\n"
// event as the API frames them: one chunk per element of content, the last
// with finish reason STOP, then a usage chunk (an empty text part and the
// usage of GeminiChat). There is no [DONE]: the stream ends at EOF. Pass
// the result to SSE.
func GeminiStream(content ...string) []string {
	events := make([]string, 0, len(content)+1)
	for i, c := range content {
		finish := ""
		if i == len(content)-1 {
			finish = "STOP"
		}
		events = append(events, GeminiEvent(`{"candidates":[`+geminiCandidate(c, finish)+`],"modelVersion":"`+GeminiModel+`","responseId":"resp-1"}`))
	}
	return append(events, GeminiEvent(`{"candidates":[`+geminiCandidate("", "")+`],`+geminiUsage+`,"modelVersion":"`+GeminiModel+`","responseId":"resp-1"}`))
}

// GeminiEvent returns data, a JSON object, as one SSE event framed as the
// Gemini API frames it: "data: " + data + "\r\n\r\n".
func GeminiEvent(data string) string { return "data: " + data + "\r\n\r\n" }

// GeminiError returns a google.rpc.Status error body
// {"error":{"code":code,"message":message,"status":status}}.
func GeminiError(code int, status, message string) string {
	return `{"error":{"code":` + strconv.Itoa(code) + `,"message":` + marshal(message) + `,"status":"` + status + `"}}`
}

// GeminiRateLimit returns the 429 step of an exhausted Gemini quota as the
// API sends it: no Retry-After header, a RESOURCE_EXHAUSTED body whose
// QuotaFailure violation names quotaID ("…PerMinute…" or "…PerDay…") and,
// when retryDelay is not empty, whose RetryInfo carries it ("58s").
func GeminiRateLimit(retryDelay, quotaID string) Step {
	details := `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":` + marshal(quotaID) + `,"quotaDimensions":{"location":"global","model":"` + GeminiModel + `"},"quotaValue":"10"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}`
	msg := "You exceeded your current quota, please check your plan and billing details."
	if retryDelay != "" {
		details += `,{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":` + marshal(retryDelay) + `}`
		msg += " Please retry in " + retryDelay + "."
	}
	body := `{"error":{"code":429,"message":` + marshal(msg) + `,"status":"RESOURCE_EXHAUSTED","details":[` + details + `]}}`
	return JSON(http.StatusTooManyRequests, body)
}
