package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// dropInPost sends body through the rig's plain http.Client, as an SDK
// would, with lc in the context when it is not nil.
func dropInPost(t *testing.T, r *rigtest.Rig, body []byte, lc *layer.Call) (*http.Response, error) {
	t.Helper()
	ctx := context.Background()
	if lc != nil {
		ctx = layer.WithCall(ctx, lc)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	resp, err := r.HTTP.Do(req)
	if resp != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

// A 2xx that the engine judged a failure — a provider error object, a
// malformed body, structured content that is not JSON — fails closed for a
// drop-in caller too: the http.Client returns an error that unwraps to the
// *layer.RecoveryError, never a 2xx an SDK would read as a success.
func TestDropIn2xxFailureFailsClosed(t *testing.T) {
	structured := &chat.Request{
		Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}},
		Schema: &chat.Schema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	rows := []struct {
		name string
		req  *chat.Request
		step recoursetest.Step
		cat  event.Category
	}{
		{"error object", canaryRequest(), recoursetest.JSON(200, recoursetest.OpenAIError("server_error", "server_error", "echo "+rigtest.Prompt)), event.CategoryProviderResponse},
		{"malformed", canaryRequest(), recoursetest.JSON(200, `{"choices":`), event.CategoryProtocol},
		{"structured not JSON", structured, okStep("plain words " + rigtest.Prompt), event.CategoryProtocol},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, tc.step, okStep("never"))
			lc := &layer.Call{}

			resp, err := dropInPost(t, r, encoded(t, tc.req), lc)

			require.Error(t, err, "a 2xx failure must not reach the caller as a response")
			assert.Nil(t, resp)
			var re *layer.RecoveryError
			require.True(t, errors.As(err, &re), "errors.As(*layer.RecoveryError) on %T", err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, tc.cat, re.Failure.Category)
			assert.Same(t, re, lc.Result.Err, "the call's Result holds the same error")
			assert.Equal(t, 1, r.Server.Count(), "a 2xx failure is not resent")
			assert.NotContains(t, err.Error(), rigtest.Prompt)
			assert.False(t, strings.Contains(err.Error(), rigtest.Key))
		})
	}
}

// The in-band error frame that ends an interrupted drop-in stream carries
// only the RecoveryError's safe text: the cut content and the provider's
// headers echo the canaries, the frame does not.
func TestDropInErrorFrameIsSafe(t *testing.T) {
	content := recoursetest.OpenAIStream(rigtest.Prompt + " " + rigtest.Key)
	cut := recoursetest.SSE(content[:2]...).WithHeader("X-Echo", rigtest.Key).Cut(len(content[0]) + len(content[1]))
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, cut, okStep("never"))
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + rigtest.Prompt + `"}]}`)

	resp, err := dropInPost(t, r, body, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)

	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	frame, ok := strings.CutPrefix(string(b), content[0]+content[1])
	require.True(t, ok, "the whole frames come first")
	assert.Equal(t, string(openai.New().ErrorFrame(re.Error())), frame)
	for _, c := range []string{rigtest.Prompt, rigtest.Key, "Bearer", "X-Echo"} {
		assert.NotContains(t, frame, c)
	}
}

// When recovery gives up on a complete non-2xx HTTP failure, a drop-in
// caller gets that final response (status, headers, body) so the SDK builds
// its own error from it, marked X-Should-Retry: false (so an SDK never
// retries on top) and X-Recourse-Outcome; the typed error, outcome and
// history, is in the call's Result. A caller asking for typed errors, a
// redirect and a cancellation still get the error.
func TestDropInFinalHTTPFailurePassesThrough(t *testing.T) {
	busy := recoursetest.OpenAIError("server_error", "server_error", "busy "+rigtest.Prompt)
	s503 := recoursetest.JSON(503, busy, "X-Provider", "kept")
	deny := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
	rows := []struct {
		name    string
		pol     retry.Policy
		steps   []recoursetest.Step
		outcome event.Outcome
		posts   int
	}{
		{"exhausted", retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, []recoursetest.Step{s503, s503, okStep("never")}, event.OutcomeExhausted, 2},
		{"admission rejected", retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: deny}, []recoursetest.Step{s503, okStep("never")}, event.OutcomeAdmissionRejected, 1},
		{"interrupted 400", retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, []recoursetest.Step{recoursetest.JSON(400, busy), okStep("never")}, event.OutcomeInterrupted, 1},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), tc.pol, tc.steps...)
			lc := &layer.Call{}

			resp, err := dropInPost(t, r, encoded(t, canaryRequest()), lc)

			require.NoError(t, err, "the final HTTP failure passes through")
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, busy, string(b), "the body is the provider's, unchanged")
			assert.Equal(t, tc.steps[0].Status, resp.StatusCode)
			assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
			assert.Equal(t, string(tc.outcome), resp.Header.Get("X-Recourse-Outcome"))
			if tc.steps[0].Status == 503 {
				assert.Equal(t, "kept", resp.Header.Get("X-Provider"))
			}
			re := lc.Result.Err
			require.NotNil(t, re, "the typed error is in the call's Result")
			assert.Equal(t, tc.outcome, re.Outcome)
			assert.Len(t, re.History, tc.posts)
			assert.Equal(t, tc.posts, r.Server.Count())
		})
	}
	t.Run("typed errors", func(t *testing.T) {
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, s503, s503)
		resp, err := dropInPost(t, r, encoded(t, canaryRequest()), &layer.Call{TypedErrors: true})
		assert.Nil(t, resp)
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	})
	t.Run("redirect", func(t *testing.T) {
		target := recoursetest.NewServer(okStep("never"))
		t.Cleanup(target.Close)
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter},
			recoursetest.Redirect(307, target.URL+completionsPath))
		resp, err := dropInPost(t, r, encoded(t, canaryRequest()), nil)
		assert.Nil(t, resp)
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Zero(t, target.Count(), "the Location is never contacted")
	})
}
