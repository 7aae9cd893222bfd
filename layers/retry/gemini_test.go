package retry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const (
	perMinute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	perDay    = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
)

func geminiRequest(stream bool) *chat.Request {
	return &chat.Request{Model: "gemini-2.5-flash", Stream: stream, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

func geminiOK(content string) recoursetest.Step {
	return recoursetest.JSON(200, recoursetest.GeminiChat(content))
}

// R23.2: RetryInfo.retryDelay in a 429's body is a minimum delay with the
// force of Retry-After, under the default policy (no provider hints), and
// the native client posts to the model's path.
func TestR23_2_RetryDelayInTheBodyIsAMinimum(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter},
		recoursetest.GeminiRateLimit("3s", perMinute), geminiOK("hi"))

	comp, err := r.Client.Complete(context.Background(), geminiRequest(false))
	require.NoError(t, err)
	assert.Equal(t, "hi", comp.Message.Content)
	assert.Equal(t, 2, r.Server.Count())
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", r.Server.Requests()[0].Path)
	f := firstFailed(t, r.Rec.Events())
	assert.Equal(t, event.RetryAfterBody, f.RetryAfter.Kind)
	assert.Equal(t, 3*time.Second, f.RetryAfter.Delay)
	assert.Equal(t, "RetryInfo.retryDelay", f.RetryAfter.Header)
	assert.Equal(t, []time.Duration{3 * time.Second}, r.Clock.Sleeps())
	assert.Equal(t, "gemini-2.5-flash", eventsOf(r.Rec.Events(), event.AttemptFailed)[0].Model, "the model read from the path names the call")
}

// R23.2: a delay over the ceiling refuses, as Retry-After does, and a
// longer Retry-After header wins over a shorter body delay.
func TestR23_2_RetryDelayOverTheCeilingRefuses(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
		recoursetest.GeminiRateLimit("3600s", perMinute), geminiOK("never"))
	_, err := r.Client.Complete(context.Background(), geminiRequest(false))
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDelayCeiling, re.Outcome)
	assert.Equal(t, time.Hour, re.Failure.RetryAfter.Delay)
	assert.Equal(t, 1, r.Server.Count())

	r = rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter},
		recoursetest.GeminiRateLimit("1s", perMinute).WithHeader("Retry-After", "4"), geminiOK("hi"))
	_, err = r.Client.Complete(context.Background(), geminiRequest(false))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{4 * time.Second}, r.Clock.Sleeps(), "the longer minimum is kept")
}

// R23.2: a per-day quota is not retried: reason insufficient_quota.
func TestR23_2_PerDayQuotaIsNotRetried(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
		recoursetest.GeminiRateLimit("20s", perDay), geminiOK("never"))
	_, err := r.Client.Complete(context.Background(), geminiRequest(false))
	re := asRecoveryError(t, err)
	assert.Equal(t, event.ReasonInsufficientQuota, re.Failure.Classification.Reason)
	assert.Equal(t, "RESOURCE_EXHAUSTED", re.Failure.ProviderCode, "the status is a known code")
	assert.False(t, re.Failure.Classification.Eligible)
	assert.Equal(t, 1, r.Server.Count())
	assert.Empty(t, r.Clock.Sleeps())
}

// R23.3: an in-band error event before any output is the failure of the
// status it names: a 503 is resent, a 400 is not.
func TestR23_3_InBandErrorBeforeOutputIsItsStatus(t *testing.T) {
	unavailable := recoursetest.SSE(recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded.")))
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter},
		unavailable, recoursetest.SSE(recoursetest.GeminiStream("Hel", "lo")...))
	text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), geminiRequest(true)))
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, "stop", comp.FinishReason)
	assert.Equal(t, 2, r.Server.Count())
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", r.Server.Requests()[0].Path)
	f := firstFailed(t, r.Rec.Events())
	assert.Equal(t, event.CategoryHTTP, f.Category)
	assert.Equal(t, 503, f.HTTPStatus)

	bad := recoursetest.SSE(recoursetest.GeminiEvent(recoursetest.GeminiError(400, "INVALID_ARGUMENT", "bad")))
	r = rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, bad, recoursetest.SSE(recoursetest.GeminiStream("never")...))
	_, _, err = rigtest.Collect(t, r.Client.Stream(context.Background(), geminiRequest(true)))
	require.Error(t, err)
	assert.Equal(t, 1, r.Server.Count())
}

// R23.3: after output, an in-band error is never resent, whatever status
// it names: the drop-in client reads the output, then the error event,
// then an error.
func TestR23_3_InBandErrorAfterOutputIsNotResent(t *testing.T) {
	errEvent := recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."))
	first := recoursetest.GeminiStream("Hel")[0]
	first = strings.Replace(first, `,"finishReason":"STOP"`, "", 1)
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
		recoursetest.SSE(first, errEvent), recoursetest.SSE(recoursetest.GeminiStream("never")...))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	require.NoError(t, err)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err)
	assert.Equal(t, first+errEvent, string(body))
	assert.Equal(t, 1, r.Server.Count())
	f := firstFailed(t, r.Rec.Events())
	assert.Equal(t, event.ReasonSemanticOutput, f.Classification.Reason)
}

// R23.4: an API key in the "key" query parameter reaches no safe output:
// no event, no failure, no error text, whatever the provider answers (an
// echo of the key, a redirect naming it, resets, an exhausted call, a
// per-day quota, an in-band error). The canary scan covers the URL.
func TestR23_4_KeyInTheQueryReachesNoSafeOutput(t *testing.T) {
	echo := recoursetest.GeminiError(401, "UNAUTHENTICATED", "API key not valid: "+rigtest.Key)
	busy := recoursetest.JSON(503, recoursetest.GeminiError(503, "UNAVAILABLE", "busy "+rigtest.Key))
	inBand := recoursetest.SSE(recoursetest.GeminiEvent(recoursetest.GeminiError(503, "UNAVAILABLE", rigtest.Key)))
	for name, sc := range map[string]struct {
		stream bool
		steps  []recoursetest.Step
	}{
		"401 echoing the key": {steps: []recoursetest.Step{recoursetest.JSON(401, echo)}},
		"503 exhausted":       {steps: []recoursetest.Step{busy, busy, busy}},
		"per-day 429":         {steps: []recoursetest.Step{recoursetest.GeminiRateLimit("1s", perDay)}},
		"redirect naming the key": {steps: []recoursetest.Step{
			recoursetest.Redirect(307, "http://127.0.0.1:1/v1beta/models/m:generateContent?key="+rigtest.Key)}},
		"resets":                 {steps: []recoursetest.Step{recoursetest.Reset(), recoursetest.Reset(), recoursetest.Reset()}},
		"in-band errors exhaust": {stream: true, steps: []recoursetest.Step{inBand, inBand, inBand}},
	} {
		t.Run(name, func(t *testing.T) {
			pol := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
			rec := wired(&pol)
			r := rigtest.New(t, gemini.New(), pol, sc.steps...)
			path := "/v1beta/models/gemini-2.5-flash:generateContent?key="
			if sc.stream {
				path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key="
			}
			req, err := http.NewRequest(http.MethodPost, r.Server.URL+path+rigtest.Key, strings.NewReader(`{"contents":[{"parts":[{"text":"`+rigtest.Prompt+`"}]}]}`))
			require.NoError(t, err)
			resp, err := r.Chain.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			require.NotEmpty(t, rec.Events())
			assert.Contains(t, r.Server.Requests()[0].RawQuery, rigtest.Key, "the key was really sent")
			for _, s := range safeOutputs(err, rec.Events()) {
				for _, b := range banned {
					assert.NotContains(t, strings.ToLower(s), strings.ToLower(b), "R23.4: a safe output holds %q", b)
				}
			}
		})
	}
}

// geminiChunk returns one streamGenerateContent event whose first
// candidate's text is text, with finish reason finish and continuation
// token token when they are not empty.
func geminiChunk(text, finish, token string) string {
	c := `{"content":{"parts":[{"text":"` + text + `"}],"role":"model"}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	if token != "" {
		c += `,"continuationToken":"` + token + `"`
	}
	return recoursetest.GeminiEvent(`{"candidates":[` + c + `,"index":0}],"modelVersion":"` + recoursetest.GeminiModel + `","responseId":"resp-1"}`)
}

const geminiToken = "Q0tQVA=="

// geminiCheckpointed is a stream whose second chunk is a checkpoint, and
// the continuation the provider sends after it.
var (
	geminiCheckpointed = []string{geminiChunk("Hel", "", ""), geminiChunk("lo", "", geminiToken), geminiChunk(" wor", "", "")}
	geminiContinuation = []string{geminiChunk(" world", "", ""), geminiChunk("!", "STOP", "")}
)

// resumeEvents returns the events that carry a Resume.
func resumeEvents(evs []event.Event) []event.Event {
	var out []event.Event
	for _, ev := range evs {
		if ev.Resume != nil {
			out = append(out, ev)
		}
	}
	return out
}

// assertContinuation checks that the second request is the first one's
// body with the checkpoint's token, to the same URL.
func assertContinuation(t *testing.T, reqs []recoursetest.Request) {
	t.Helper()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Path, reqs[1].Path)
	assert.Equal(t, reqs[0].RawQuery, reqs[1].RawQuery)
	assert.NotContains(t, string(reqs[0].Body), "continuationToken")
	var first, second map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(reqs[0].Body, &first))
	require.NoError(t, json.Unmarshal(reqs[1].Body, &second))
	assert.Equal(t, `"`+geminiToken+`"`, string(second["continuationToken"]))
	delete(second, "continuationToken")
	assert.Equal(t, first, second, "the same request, with the token")
}

// R23.9: a native stream cut after output, right after a checkpoint chunk,
// continues from it with the same request and the token: the caller reads
// the text complete, each byte once, and the continuation is a resume.
func TestR23_9_NativeStreamContinuesFromItsCheckpoint(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
		recoursetest.SSE(geminiCheckpointed[:2]...).CutEvents(2), recoursetest.SSE(geminiContinuation...))
	text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), geminiRequest(true)))
	require.NoError(t, err)
	assert.Equal(t, "Hello world!", text)
	assert.Equal(t, "Hello world!", comp.Message.Content)
	assert.Equal(t, "stop", comp.FinishReason)
	assertContinuation(t, r.Server.Requests())
	res := resumeEvents(r.Rec.Events())
	require.NotEmpty(t, res, "the continuation is visible as a resume")
	assert.Equal(t, int64(-1), res[0].Resume.Cursor)
	assert.NotEmpty(t, eventsOf(r.Rec.Events(), event.AttemptSucceeded))
	for _, ev := range r.Rec.Events() {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		assert.NotContains(t, string(b), geminiToken, "no safe output holds the token")
	}
}

// R23.9: a drop-in stream cut right after a checkpoint reads the first
// stream's events, then the continuation's, each byte once.
func TestR23_9_DropInStreamContinuesFromItsCheckpoint(t *testing.T) {
	r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
		recoursetest.SSE(geminiCheckpointed[:2]...).CutEvents(2), recoursetest.SSE(geminiContinuation...))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5}}`))
	require.NoError(t, err)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, strings.Join(geminiCheckpointed[:2], "")+strings.Join(geminiContinuation, ""), string(body))
	assertContinuation(t, r.Server.Requests())
	assert.NotEmpty(t, resumeEvents(r.Rec.Events()))
}

// R23.9: a cut after output with no checkpoint handed over, or with output
// handed over after the last checkpoint, is not continued: the stream is
// interrupted, as before, and nothing is sent again.
func TestR23_9_CutWithoutACheckpointIsNotContinued(t *testing.T) {
	for name, events := range map[string][]string{
		"no token":                {geminiChunk("Hel", "", ""), geminiChunk("lo", "", "")},
		"output after checkpoint": geminiCheckpointed,
	} {
		t.Run(name, func(t *testing.T) {
			r := rigtest.New(t, gemini.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter},
				recoursetest.SSE(events...).CutEvents(len(events)), recoursetest.SSE(geminiContinuation...))
			_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), geminiRequest(true)))
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, 1, r.Server.Count())
			assert.Empty(t, resumeEvents(r.Rec.Events()))
		})
	}
}
