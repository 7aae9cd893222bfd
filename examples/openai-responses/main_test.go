package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const id = "resp_t1"

func textEvents() []string { return recoursetest.ResponsesEvents(id, "Hello", ", world", "!") }

// recorder collects the lifecycle events of one test.
type recorder struct{ events []event.Event }

func (r *recorder) onEvent(ev event.Event) error { r.events = append(r.events, ev); return nil }

// rig is a scripted server and the program's client for it.
func rig(t *testing.T, steps ...recoursetest.Step) (*recoursetest.Server, openai.Client, *recorder) {
	t.Helper()
	srv := recoursetest.NewServer(steps...)
	t.Cleanup(srv.Close)
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test", rec.onEvent)
	require.NoError(t, err)
	return srv, client, rec
}

// logOnly sends a background create straight to srv, not through recourse,
// so that the scripted provider holds its event log.
func logOnly(t *testing.T, srv *recoursetest.Server) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"background":true}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func TestRunResumesTheCutStreamOnce(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), "answer: "+strings.Join(answer, "")+"\n")
	assert.Contains(t, out.String(), "resuming after event 7")
	assert.NotContains(t, out.String(), "resp_demo", "no response ID in the printed events")
}

// R19.1: client.Responses.New, a 503 first: resent once, the answer decoded
// by the SDK.
func TestR19_1_OpenAIGoResponsesNew(t *testing.T) {
	srv, client, _ := rig(t, recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, recoursetest.ResponsesJSON(id, "Hello.")))
	res, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	require.NoError(t, err)
	assert.Equal(t, "Hello.", res.OutputText())
	assert.Equal(t, id, res.ID)
	assert.Equal(t, 2, srv.Count())
}

// R19.6: a 400 reaches openai-go as its own *openai.Error, never resent.
func TestR19_6_OpenAIGoKeepsItsErrorType(t *testing.T) {
	srv, client, _ := rig(t, recoursetest.JSON(400, recoursetest.OpenAIError("invalid_request_error", "invalid_request_error", "bad input")))
	_, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	var aerr *openai.Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, http.StatusBadRequest, aerr.StatusCode)
	assert.Equal(t, "invalid_request_error", aerr.Code)
	assert.Equal(t, 1, srv.Count())
}

// R19.9: a background NewStreaming cut after output is resumed: the SDK's
// stream yields every event once and the whole text.
func TestR19_9_OpenAIGoBackgroundStreamIsResumed(t *testing.T) {
	evs := textEvents()
	srv, client, rec := rig(t, recoursetest.ResponsesBackground(id, evs...).CutEvents(6), recoursetest.ResponsesResume(id))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Background: openai.Bool(true), Store: openai.Bool(true),
	})
	var text string
	var seqs []int64
	for stream.Next() {
		ev := stream.Current()
		seqs = append(seqs, ev.SequenceNumber)
		if ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	require.NoError(t, stream.Err())
	stream.Close()
	assert.Equal(t, "Hello, world!", text)
	want := make([]int64, len(evs))
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, seqs, "every sequence number once, in order")
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	assert.Equal(t, "starting_after=5&stream=true", reqs[1].RawQuery)
	var resumed bool
	for _, ev := range rec.events {
		resumed = resumed || (ev.Type == event.RetryStarted && ev.Resume != nil && ev.Resume.Cursor == 5)
	}
	assert.True(t, resumed, "retry_started carries the cursor")
}

// R19.13: GetStreaming (the SDK's own resume, from a cursor it chose) cut
// again is resumed after the last event it was handed.
func TestR19_13_OpenAIGoGetStreamingIsResumed(t *testing.T) {
	evs := textEvents()
	srv, client, _ := rig(t, recoursetest.ResponsesBackground(id, evs...),
		recoursetest.ResponsesResume(id).CutEvents(2), recoursetest.ResponsesResume(id))
	logOnly(t, srv)
	stream := client.Responses.GetStreaming(context.Background(), id, responses.ResponseGetParams{StartingAfter: openai.Int(2)})
	var seqs []int64
	for stream.Next() {
		seqs = append(seqs, stream.Current().SequenceNumber)
	}
	require.NoError(t, stream.Err())
	stream.Close()
	assert.Equal(t, []int64{3, 4, 5, 6, 7, 8, 9, 10}, seqs)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "starting_after=4&stream=true", reqs[2].RawQuery)
}

// R19.13: Get (a poll) is retried on 503 without admission, and the SDK
// decodes the stored response in any status.
func TestR19_13_OpenAIGoGetIsRetried(t *testing.T) {
	srv, client, rec := rig(t, recoursetest.ResponsesBackground(id, textEvents()[:6]...),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")), recoursetest.ResponsesRetrieve(id))
	logOnly(t, srv)
	res, err := client.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusInProgress, res.Status)
	assert.Equal(t, 3, srv.Count())
	for _, ev := range rec.events {
		assert.NotEqual(t, event.AdmissionPending, ev.Type)
	}
}

// R19.12: cancelling the context of a background NewStreaming has the
// response cancelled at the provider.
func TestR19_12_OpenAIGoCancelledBackgroundStream(t *testing.T) {
	srv, client, _ := rig(t, recoursetest.ResponsesBackground(id, textEvents()[:5]...).Held(), recoursetest.ResponsesCancel(id))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Background: openai.Bool(true), Store: openai.Bool(true),
	})
	for stream.Next() {
		if stream.Current().Type == "response.output_text.delta" {
			cancel()
		}
	}
	stream.Close()
	assert.ErrorIs(t, stream.Err(), context.Canceled, "R9.1: the context's error, no in-band frame")
	require.Eventually(t, func() bool { return srv.Cancelled(id) }, 10*time.Second, time.Millisecond)
}

// R19.14, R19.13: openai-go's background polling pattern: New with
// Background answers queued (a 503 first, resent: a status answer shows
// nothing was queued), then Get polls until the response completed.
func TestR19_14_OpenAIGoBackgroundNewThenPoll(t *testing.T) {
	queued := `{"id":"` + id + `","object":"response","created_at":1,"status":"queued","background":true,"model":"gpt-4.1-mini","output":[]}`
	srv, client, _ := rig(t,
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, queued),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, recoursetest.ResponsesJSON(id, "Done.")))
	res, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Background: openai.Bool(true),
	})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusQueued, res.Status)
	assert.Equal(t, id, res.ID)
	got, err := client.Responses.Get(context.Background(), res.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "Done.", got.OutputText())
	assert.Equal(t, 4, srv.Count())
}
