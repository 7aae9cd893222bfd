package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// Streaming through the official Ollama client with the chain as its
// transport (SPEC R13). The client streams unless the request says
// "stream": false, so the chain hands it a recovering body.
//
// Two properties of the client (v0.17.4, api/client.go stream) shape what
// these tests can show:
//
//   - It stops at a body read error without returning it (it never checks
//     its bufio.Scanner's Err). Chat returns nil for a cut or truncated
//     stream without recourse. Through recourse the body ends with an
//     in-band {"error":"<safe text>"} line before the read error, so Chat
//     fails with that text (a plain error); the typed error reaches the
//     caller through a *layer.Call in the request context, which the
//     program's chatStream uses.
//   - It fails on a blank line (json.Unmarshal of an empty line, returned as
//     errors.New("")). recourse's Ollama codec treats a blank line as a
//     keepalive (R14.2) and, as a drop-in body, passes its bytes through
//     unchanged, so the client rejects it exactly as it would without
//     recourse. A real Ollama (v0.17.4, server/routes.go streamResponse)
//     sends no blank lines; the keepalive-style pre-content frame that the
//     client accepts is a chunk with empty content, used below.

// streamRequest is a streaming chat request; stream nil is Ollama's default
// (a stream), as is true.
func streamRequest(stream *bool) *api.ChatRequest {
	return &api.ChatRequest{
		Model:    "llama3.2",
		Messages: []api.Message{{Role: "user", Content: "hello"}},
		Stream:   stream,
	}
}

// streamed is what one streaming Chat gave the caller.
type streamed struct {
	calls   int    // fn calls
	content string // the concatenated message contents
	done    bool   // the last response had done:true
	err     error  // what chatStream (or Chat) returned
}

// collect returns an api.ChatResponseFunc that records into s.
func (s *streamed) collect(r api.ChatResponse) error {
	s.calls++
	s.content += r.Message.Content
	s.done = r.Done
	return nil
}

// streamChat runs one streaming chat through the program's client
// (newClient with admit) and the program's chatStream.
func streamChat(t *testing.T, srv *recoursetest.Server, admit layer.AdmissionHook, stream *bool) (streamed, *recorder) {
	t.Helper()
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	rec := &recorder{}
	client, err := newClient(base, admit, rec.onEvent)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s streamed
	s.err = chatStream(ctx, client, streamRequest(stream), s.collect)
	return s, rec
}

// chatDirect runs the same chat with Chat itself: through the program's
// client when viaChain, else through a plain http.Client.
func chatDirect(t *testing.T, srv *recoursetest.Server, viaChain bool) streamed {
	t.Helper()
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	var client *api.Client
	if viaChain {
		client, err = newClient(base, nil, nil)
		require.NoError(t, err)
	} else {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client = api.NewClient(base, &http.Client{Transport: tr})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s streamed
	s.err = client.Chat(ctx, streamRequest(nil), s.collect)
	return s
}

// assertStreamPOSTs checks n POSTs to /api/chat with byte-identical
// streaming bodies (no "stream":false).
func assertStreamPOSTs(t *testing.T, srv *recoursetest.Server, n int) {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, n, "POSTs that reached the server")
	for i, r := range reqs {
		assert.Equal(t, http.MethodPost, r.Method, "request %d method", i)
		assert.Equal(t, "/api/chat", r.Path, "request %d path", i)
		assert.NotContains(t, string(r.Body), `"stream":false`, "request %d body", i)
		assert.Equal(t, string(reqs[0].Body), string(r.Body), "request %d body differs from the first", i)
	}
}

func allow() *hookSpy { return &hookSpy{decision: layer.Allow} }

// emptyChunk is a streamed line with empty content: a frame, but no
// semantic evidence (R13.1), the way a model's first token can be empty.
var emptyChunk = recoursetest.OllamaStream("")[0]

// requireTyped checks that err is our typed error (returned as is, not
// wrapped) with outcome o, and returns it.
func requireTyped(t *testing.T, err error, o event.Outcome) *layer.RecoveryError {
	t.Helper()
	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", err, err)
	assert.Equal(t, o, rerr.Outcome)
	assert.Same(t, rerr, err, "chatStream returns the Report's error unwrapped")
	return rerr
}

// A stream that fails before any content (an empty chunk, then the
// connection drops) is resumed when the hook allows it (R8.3, R13.1): fn
// sees the second attempt's stream alone — the cut attempt's empty chunk
// was held for an output that never came and dropped by the resend
// (R13.9) —, the content exactly once; 2 POSTs; the hook was asked once.
// Stream nil and true alike.
func TestStreamEmptyChunkThenAbortIsResumed(t *testing.T) {
	yes := true
	for name, stream := range map[string]*bool{"stream nil": nil, "stream true": &yes} {
		t.Run(name, func(t *testing.T) {
			srv := start(t,
				recoursetest.NDJSON(emptyChunk).CutEvents(1),
				recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...),
			)
			spy := allow()

			got, rec := streamChat(t, srv, spy.hook, stream)

			require.NoError(t, got.err)
			assert.Equal(t, "Hello", got.content)
			assert.Equal(t, 3, got.calls, "Hel, lo, done: each once, no empty chunk of the cut attempt")
			assert.True(t, got.done)
			assertStreamPOSTs(t, srv, 2)
			asked := spy.requests()
			require.Len(t, asked, 1)
			assert.Equal(t, 2, asked[0].NextAttempt)
			assert.Equal(t, event.CategoryTransport, asked[0].Failure.Category)
			assert.False(t, asked[0].Failure.Progress.Observed.Any(), "nothing semantic before the cut")
			assert.Equal(t, []event.Type{
				event.AttemptStarted, event.Telemetry, event.AttemptFailed,
				event.AdmissionPending, event.AdmissionAllowed,
				event.DelayScheduled, event.RetryStarted,
				event.AttemptStarted, event.Telemetry, event.Telemetry, event.Telemetry,
				event.Metrics, event.AttemptSucceeded,
			}, rec.types())
		})
	}
}

// The same with the cut right after the response headers: no line at all.
func TestStreamHeadersThenAbortIsResumed(t *testing.T) {
	srv := start(t,
		recoursetest.NDJSON().CutEvents(0),
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...),
	)

	got, _ := streamChat(t, srv, allow().hook, nil)

	require.NoError(t, got.err)
	assert.Equal(t, "Hello", got.content)
	assert.Equal(t, 3, got.calls)
	assertStreamPOSTs(t, srv, 2)
}

// A blank-line keepalive, then the connection drops: the official client
// itself fails on the blank line (errors.New(""), an empty message). recourse
// leaves NDJSON blank keepalives out of the body a drop-in client reads, so
// through the chain the cut is resumed and the client sees one answer.
func TestStreamBlankKeepaliveIsLeftOutOfTheBody(t *testing.T) {
	script := []recoursetest.Step{
		recoursetest.NDJSON(ollamaKeepalive).CutEvents(1),
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...),
	}
	t.Run("plain Ollama client", func(t *testing.T) {
		srv := start(t, script...)
		got := chatDirect(t, srv, false)
		require.Error(t, got.err)
		assert.Empty(t, got.err.Error())
		assert.Zero(t, got.calls)
		assert.Equal(t, 1, srv.Count())
	})
	t.Run("through recourse", func(t *testing.T) {
		srv := start(t, script...)
		spy := allow()
		got, _ := streamChat(t, srv, spy.hook, nil)
		require.NoError(t, got.err, "recourse leaves NDJSON blank keepalives out of the body and resumes the cut stream")
		assert.Equal(t, "Hello", got.content)
		assertStreamPOSTs(t, srv, 2)
	})
}

// Without a hook the chain never resends an Ollama request (R8.3). Where
// the typed error surfaces depends on when the failure happens:
//   - after the response headers (a body read error), Chat returns the
//     in-band error line's safe text; chatStream returns the
//     *layer.RecoveryError (outcome admission_required) from its Call;
//   - before any response byte (the connection drops), RoundTrip fails,
//     http.Client wraps the error in a *url.Error and the client returns
//     it as is: errors.As finds it through Chat directly.
//
// One POST either way.
func TestStreamWithoutHookNeedsAdmission(t *testing.T) {
	full := recoursetest.NDJSON(recoursetest.OllamaStream("must not be fetched")...)
	t.Run("after headers, Chat", func(t *testing.T) {
		srv := start(t, recoursetest.NDJSON(emptyChunk).CutEvents(1), full)
		got := chatDirect(t, srv, true)
		require.Error(t, got.err, "the in-band error line fails the Ollama client")
		assert.Equal(t, "recourse: recovery admission_required (transport/transient, HTTP 200, wire attempt 1)", got.err.Error())
		assert.Equal(t, 1, got.calls, "fn saw the empty chunk only")
		assert.False(t, got.done)
		assertStreamPOSTs(t, srv, 1)
	})
	t.Run("after headers, chatStream", func(t *testing.T) {
		srv := start(t, recoursetest.NDJSON(emptyChunk).CutEvents(1), full)
		got, rec := streamChat(t, srv, nil, nil)
		rerr := requireTyped(t, got.err, event.OutcomeAdmissionRequired)
		assert.True(t, rerr.Failure.Classification.Eligible, "eligible, but not admitted")
		assert.Equal(t, event.CategoryTransport, rerr.Failure.Category)
		assert.Equal(t, http.StatusOK, rerr.Failure.HTTPStatus)
		assert.Len(t, rerr.History, 1)
		assert.Equal(t, 1, got.calls)
		assertStreamPOSTs(t, srv, 1)
		assert.Equal(t, []event.Type{
			event.AttemptStarted, event.Telemetry, event.AttemptFailed, event.AdmissionRequired,
		}, rec.types())
	})
	t.Run("before headers, Chat", func(t *testing.T) {
		srv := start(t, recoursetest.Reset(), full)
		got := chatDirect(t, srv, true)
		var rerr *layer.RecoveryError
		require.True(t, errors.As(got.err, &rerr), "errors.As(*layer.RecoveryError) on %T: %v", got.err, got.err)
		assert.Equal(t, event.OutcomeAdmissionRequired, rerr.Outcome)
		var uerr *url.Error
		assert.True(t, errors.As(got.err, &uerr), "http.Client's *url.Error, returned as is; got %T", got.err)
		assert.Zero(t, got.calls)
		assertStreamPOSTs(t, srv, 1)
	})
}

// Content, then the connection drops: the attempt cannot be replaced
// (R13.1), even with an allowing hook, which is not asked. The plain client
// returns nil (the read error is dropped); Chat through the chain fails
// with the in-band error line's safe text; chatStream returns the typed
// error, outcome interrupted. Content once, 1 POST.
func TestStreamContentThenAbortIsInterrupted(t *testing.T) {
	script := []recoursetest.Step{
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel")[0]).CutEvents(1),
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...),
	}
	t.Run("plain Ollama client", func(t *testing.T) {
		srv := start(t, script...)
		got := chatDirect(t, srv, false)
		assert.NoError(t, got.err, "the Ollama client reports a cut stream as success")
		assert.Equal(t, "Hel", got.content)
	})
	t.Run("Chat through recourse", func(t *testing.T) {
		srv := start(t, script...)
		got := chatDirect(t, srv, true)
		require.Error(t, got.err, "the in-band error line fails the client: never a success")
		assert.Equal(t, "recourse: recovery interrupted (transport/semantic_output, HTTP 200, wire attempt 1)", got.err.Error())
		assert.Equal(t, "Hel", got.content)
		assert.Equal(t, 1, srv.Count())
	})
	t.Run("chatStream", func(t *testing.T) {
		srv := start(t, script...)
		spy := allow()
		got, rec := streamChat(t, srv, spy.hook, nil)
		rerr := requireTyped(t, got.err, event.OutcomeInterrupted)
		assert.Equal(t, event.CategoryTransport, rerr.Failure.Category)
		assert.Equal(t, event.ReasonSemanticOutput, rerr.Failure.Classification.Reason)
		assert.Equal(t, int64(3), rerr.Failure.Progress.Observed.ContentBytes)
		assert.Equal(t, "Hel", got.content)
		assert.Equal(t, 1, got.calls)
		assert.Empty(t, spy.requests(), "no admission is asked for an interrupted stream")
		assertStreamPOSTs(t, srv, 1)
		assert.Equal(t, []event.Type{
			event.AttemptStarted, event.Telemetry, event.AttemptFailed, event.Interrupted,
		}, rec.types())
	})
}

// The body ends cleanly before the done:true line. The plain client calls
// it success; through recourse it is an incomplete stream (R13.3): Chat
// fails with the in-band line's text, chatStream the typed interrupted error.
func TestStreamWithoutDoneIsAnError(t *testing.T) {
	lines := recoursetest.OllamaStream("Hel", "lo")
	noDone := recoursetest.NDJSON(lines[:len(lines)-1]...)
	t.Run("plain Ollama client", func(t *testing.T) {
		srv := start(t, noDone)
		got := chatDirect(t, srv, false)
		assert.NoError(t, got.err, "the Ollama client accepts a stream without done:true")
		assert.Equal(t, "Hello", got.content)
		assert.False(t, got.done)
	})
	t.Run("Chat through recourse", func(t *testing.T) {
		srv := start(t, noDone, recoursetest.NDJSON(lines...))
		got := chatDirect(t, srv, true)
		require.Error(t, got.err, "an incomplete stream is never a success")
		assert.Contains(t, got.err.Error(), "recourse: recovery interrupted")
		assert.Equal(t, "Hello", got.content)
	})
	t.Run("chatStream", func(t *testing.T) {
		srv := start(t, noDone, recoursetest.NDJSON(lines...))
		got, rec := streamChat(t, srv, allow().hook, nil)
		rerr := requireTyped(t, got.err, event.OutcomeInterrupted)
		assert.Equal(t, event.CategoryTransport, rerr.Failure.Category, "an incomplete stream is a transport failure (R13.3)")
		assert.Equal(t, "Hello", got.content, "what arrived was delivered once")
		assert.False(t, got.done)
		assertStreamPOSTs(t, srv, 1)
		assert.Equal(t, event.Interrupted, rec.types()[len(rec.events)-1])
	})
}

// An in-band {"error":…} line after content. The plain client returns the
// message as an error; through the chain the error line is handed to the
// client before the typed error, so Chat reports the provider's error just
// the same.
func TestStreamMidStreamErrorLine(t *testing.T) {
	script := []recoursetest.Step{
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel")[0], recoursetest.OllamaError("an error was encountered while running the model")+"\n"),
		recoursetest.NDJSON(recoursetest.OllamaStream("Hel", "lo")...),
	}
	t.Run("plain Ollama client", func(t *testing.T) {
		srv := start(t, script...)
		got := chatDirect(t, srv, false)
		require.Error(t, got.err)
		assert.Equal(t, "an error was encountered while running the model", got.err.Error())
		assert.Equal(t, "Hel", got.content)
	})
	t.Run("Chat through recourse", func(t *testing.T) {
		srv := start(t, script...)
		got := chatDirect(t, srv, true)
		require.Error(t, got.err, "the error line is handed to the client before the typed error")
		assert.Equal(t, "an error was encountered while running the model", got.err.Error())
		assert.Equal(t, "Hel", got.content)
	})
}

// chatStream changes nothing when Chat itself fails: its Report leaves
// TypedErrors false, so a permanent 400 still passes through and Chat's
// api.StatusError is returned; the Report holds the typed error too.
func TestStreamBadRequestThroughChatStream(t *testing.T) {
	srv := start(t, recoursetest.JSON(http.StatusBadRequest, recoursetest.OllamaError("model is required")))

	got, rec := streamChat(t, srv, allow().hook, nil)

	var serr api.StatusError
	require.True(t, errors.As(got.err, &serr), "got %T: %v", got.err, got.err)
	assert.Equal(t, http.StatusBadRequest, serr.StatusCode)
	assert.Equal(t, "model is required", serr.ErrorMessage)
	var rerr *layer.RecoveryError
	assert.False(t, errors.As(got.err, &rerr))
	assertStreamPOSTs(t, srv, 1)
	assert.Equal(t, []event.Type{event.AttemptStarted, event.AttemptFailed, event.Interrupted}, rec.types())
}

// ollamaKeepalive is a blank NDJSON line, the keepalive recourse's Ollama
// codec recognizes (R14.2).
const ollamaKeepalive = "\n"
