package recoursetest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/recoursetest"
)

// TestAnthropicStepsSpeakTheMessagesAPI checks the canned Messages API
// steps byte by byte: a whole stream ends with message_stop, a cut one
// stops after its n-th event, and the overload answer is a 529.
func TestAnthropicStepsSpeakTheMessagesAPI(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	srv := recoursetest.NewServer(
		recoursetest.AnthropicStream(evs...),
		recoursetest.AnthropicStream(evs...).CutEvents(4),
		recoursetest.AnthropicOverloaded(),
	)
	defer srv.Close()
	get := func() (*http.Response, string, error) {
		resp, err := http.Post(srv.URL+recoursetest.AnthropicPath, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	resp, body, err := get()
	if err != nil || resp.Header.Get("request-id") == "" || !strings.HasPrefix(body, "event: message_start\n") || !strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("whole stream: %v %q", err, body)
	}
	if !strings.Contains(body, `"text":"Hel"`) || len(evs) != 8 {
		t.Errorf("events %d, body %q", len(evs), body)
	}
	_, body, err = get()
	if err == nil || body != strings.Join(evs[:4], "") {
		t.Errorf("cut stream: %v %q", err, body)
	}
	resp, body, _ = get()
	if resp.StatusCode != 529 || !strings.Contains(body, `"overloaded_error"`) {
		t.Errorf("overload: %d %q", resp.StatusCode, body)
	}
	if !strings.Contains(recoursetest.AnthropicErrorEvent("api_error", "x"), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"") {
		t.Error("error event shape")
	}
}
