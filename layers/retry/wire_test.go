package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
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

func TestR2_1_OnePostPerAttempt(t *testing.T) {
	rows := []struct {
		name      string
		steps     []recoursetest.Step
		max       int
		closeIdle bool
		posts     int
		ok        bool
	}{
		{"503,503,200", []recoursetest.Step{statusStep(503), statusStep(503), okStep("ok")}, 3, false, 3, true},
		{"503,503,200 closing connections", []recoursetest.Step{statusStep(503), statusStep(503), okStep("ok")}, 3, true, 3, true},
		{"503 x3 exhausted", repeat(statusStep(503), 5), 3, false, 3, false},
		{"503 x3 exhausted closing connections", repeat(statusStep(503), 5), 3, true, 3, false},
		{"reset,reset,200", []recoursetest.Step{recoursetest.Reset(), recoursetest.Reset(), okStep("ok")}, 3, false, 3, true},
		{"reset x3 exhausted", repeat(recoursetest.Reset(), 5), 3, false, 3, false},
		{"421 not retried", []recoursetest.Step{statusStep(421), okStep("never")}, 3, false, 1, false},
		{"421 not retried closing connections", []recoursetest.Step{statusStep(421), okStep("never")}, 3, true, 1, false},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: tc.max, Jitter: zeroJitter}, tc.steps...)
			r.Server.CloseIdleAfterEach(tc.closeIdle)

			_, err := r.Client.Complete(context.Background(), canaryRequest())

			if tc.ok {
				require.NoError(t, err)
			} else {
				asRecoveryError(t, err)
			}
			assert.Equal(t, tc.posts, r.Server.Count(), "R2.1: exactly one POST per attempt")
			assert.Equal(t, tc.posts, len(eventsOf(r.Rec.Events(), event.AttemptStarted)))
			for _, q := range r.Server.Requests() {
				assert.Equal(t, http.MethodPost, q.Method)
				assert.Equal(t, completionsPath, q.Path)
			}
		})
	}
}

// R2.1: a failure on a reused keep-alive connection is not resent by the
// transport underneath the engine: with MaxAttempts 1 the reset is final.
func TestR2_1_NoSilentResendOnAReusedConnection(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1}, okStep("warm"), recoursetest.Reset(), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	_, err = r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category)
	assert.Equal(t, 2, r.Server.Count(), "R2.1: the reset attempt was not resent")
}

func TestR2_2_421PassesThroughAnHTTPClient(t *testing.T) {
	body := recoursetest.OpenAIError("invalid_request_error", "", "misdirected")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, recoursetest.JSON(421, body), okStep("never"))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)

	resp, err := r.HTTP.Do(req)

	require.NoError(t, err, "a complete ineligible response passes through for SDK error handling")
	defer resp.Body.Close()
	assert.Equal(t, 421, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, body, string(b))
	assert.Equal(t, 1, r.Server.Count(), "R2.2: a 421 is not resent")
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, r.Rec.Types())
}

// R2.3: every attempt sends the byte-identical body and headers, whatever
// the hooks do to the caller's request or to the snapshots.
func TestR2_3_EveryAttemptSendsIdenticalBytes(t *testing.T) {
	for _, structured := range []bool{false, true} {
		t.Run("structured="+strconv.FormatBool(structured), func(t *testing.T) {
			req := &chat.Request{
				Model: "gpt-4o-mini",
				Messages: []chat.Message{
					{Role: chat.System, Content: "be brief"},
					{Role: chat.User, Content: rigtest.Prompt},
				},
				Tools: []chat.ToolSpec{{Name: "lookup", Description: "find", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}},
			}
			schema := chat.Schema{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
			want := func() []byte {
				c := *req
				if structured {
					s := schema
					s.Schema = append(json.RawMessage(nil), schema.Schema...)
					c.Schema = &s
				}
				c.Messages = append([]chat.Message(nil), req.Messages...)
				return encoded(t, &c)
			}()

			var mu sync.Mutex
			hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				mu.Lock()
				defer mu.Unlock()
				// Mutate everything the caller still holds.
				req.Messages[1].Content = "MUTATED"
				req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: "appended"})
				req.Tools[0].Name = "mutated"
				for i := range req.Tools[0].Parameters {
					req.Tools[0].Parameters[i] = ' '
				}
				req.Model = "other-model"
				for i := range schema.Schema {
					schema.Schema[i] = ' '
				}
				return layer.Allow, nil
			}
			p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: hook}
			p.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
				for i := range s.Bytes {
					s.Bytes[i] = '!'
				}
				s.Header.Set("Authorization", "Bearer other")
				s.Header.Del("Content-Type")
				return nil
			}
			final := okStep("done")
			if structured {
				final = okStep(`{"a":"done"}`)
			}
			r := rigtest.New(t, openai.New(), p, statusStep(503), statusStep(503), final)

			var err error
			if structured {
				_, err = r.Client.CompleteStructured(context.Background(), req, schema)
			} else {
				_, err = r.Client.Complete(context.Background(), req)
			}
			require.NoError(t, err)

			reqs := r.Server.Requests()
			require.Len(t, reqs, 3)
			for i, q := range reqs {
				assert.Equal(t, string(want), string(q.Body), "R2.3: attempt %d sends the bytes encoded once", i+1)
				assert.Equal(t, reqs[0].Header, q.Header, "R2.3: attempt %d sends the same headers", i+1)
			}
			assert.Equal(t, "Bearer "+rigtest.Key, reqs[2].Header.Get("Authorization"))
			assert.Equal(t, "application/json", reqs[2].Header.Get("Content-Type"))
		})
	}
}

// R2.4: the server sees exactly the header names of a plain net/http POST
// of the same request, and no header value carries a local identity.
func TestR2_4_NoInventedHeaders(t *testing.T) {
	body := encoded(t, canaryRequest())
	baseline := startServer(t, okStep("plain"))
	plain, err := http.NewRequest(http.MethodPost, baseline.URL+completionsPath, bytes.NewReader(body))
	require.NoError(t, err)
	plain.Header.Set("Authorization", "Bearer "+rigtest.Key)
	plain.Header.Set("Content-Type", "application/json")
	plain.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(plain)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	require.Len(t, baseline.Requests(), 1)
	want := headerNames(baseline.Requests()[0].Header)

	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, statusStep(503), recoursetest.Reset(), okStep("ok"))
	_, err = r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)

	var ids []string
	for _, e := range rec.Events() {
		ids = append(ids, e.LogicalID, e.AttemptID)
	}
	require.NotEmpty(t, ids)
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	for i, q := range reqs {
		assert.Equal(t, want, headerNames(q.Header), "R2.4: attempt %d has the header names of a plain POST", i+1)
		for name, vs := range q.Header {
			assert.NotContains(t, strings.ToLower(name), "idempotency")
			for _, v := range vs {
				for _, id := range ids {
					if id != "" {
						assert.NotContains(t, v, id, "R2.4: %s carries a local identity", name)
					}
				}
			}
		}
		assert.NotContains(t, string(q.Body), ids[0], "R2.4: nor does the body")
		assert.Equal(t, body, q.Body)
	}
}

func headerNames(h http.Header) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
