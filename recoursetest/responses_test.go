package recoursetest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get sends a GET of path on the fixture's server and returns the status
// and what arrived of the body, with the read error.
func (f *fixture) get(t *testing.T, path string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, f.srv.URL+path, nil)
	require.NoError(t, err)
	resp, err := f.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), rerr
}

func TestResponsesEventsCountSequenceNumbersFromZero(t *testing.T) {
	evs := ResponsesEvents("resp_x", "Hel", "lo")
	require.Len(t, evs, 10)
	for i, e := range evs {
		assert.Equal(t, int64(i), eventSequence(e), "event %d", i)
		assert.True(t, strings.HasSuffix(e, "\n\n"))
	}
	assert.Contains(t, evs[0], `"type":"response.created"`)
	assert.Contains(t, evs[0], `"id":"resp_x"`)
	assert.Contains(t, evs[4], `"delta":"Hel"`)
	assert.Contains(t, evs[5], `"delta":"lo"`)
	assert.Contains(t, evs[9], `"type":"response.completed"`)
	assert.Contains(t, evs[9], `"text":"Hello"`)
}

func TestResponsesBackgroundCutThenResumeFromCursor(t *testing.T) {
	evs := ResponsesEvents("resp_b", "a", "b", "c")
	f := start(t,
		ResponsesBackground("resp_b", evs...).CutEvents(5),
		ResponsesResume("resp_b"),
		ResponsesResume("resp_b").CutEvents(1),
	)
	resp, err := f.post(t, context.Background(), ResponsesPath, `{"background":true,"stream":true}`)
	require.NoError(t, err)
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.ErrorIs(t, rerr, io.ErrUnexpectedEOF)
	assert.Equal(t, strings.Join(evs[:5], ""), string(b), "exactly the first five events")

	status, body, rerr := f.get(t, ResponsesPath+"/resp_b?stream=true&starting_after=4")
	require.NoError(t, rerr)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, strings.Join(evs[5:], ""), body, "every event after the cursor, once")

	_, body, rerr = f.get(t, ResponsesPath+"/resp_b?stream=true&starting_after=7")
	require.ErrorIs(t, rerr, io.ErrUnexpectedEOF)
	assert.Equal(t, evs[8], body, "a resume read cut after its first event")
	reqs := f.srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "stream=true&starting_after=4", reqs[1].RawQuery)
}

func TestResponsesRetrieveAndCancel(t *testing.T) {
	evs := ResponsesEvents("resp_c", "x")
	f := start(t,
		ResponsesBackground("resp_c", evs[:3]...),
		ResponsesRetrieve("resp_c"),
		ResponsesCancel("resp_c"),
		ResponsesRetrieve("resp_c"),
		ResponsesRetrieve("resp_nope"),
		ResponsesResume("resp_c"),
	)
	resp, err := f.post(t, context.Background(), ResponsesPath, `{}`)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.False(t, f.srv.Cancelled("resp_c"))

	status, body, _ := f.get(t, ResponsesPath+"/resp_c")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"status":"in_progress"`)

	resp, err = f.post(t, context.Background(), ResponsesPath+"/resp_c/cancel", ``)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `"status":"cancelled"`)
	assert.True(t, f.srv.Cancelled("resp_c"))

	_, body, _ = f.get(t, ResponsesPath+"/resp_c")
	assert.Contains(t, body, `"status":"cancelled"`)

	status, body, _ = f.get(t, ResponsesPath+"/resp_nope")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, `"error"`)

	status, body, _ = f.get(t, ResponsesPath+"/resp_c?stream=true")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, strings.Join(evs[:3], ""), body, "no starting_after: the whole log")
}

func TestResponsesResumeRefusesABadCursor(t *testing.T) {
	f := start(t, ResponsesBackground("resp_d", ResponsesEvents("resp_d", "x")...), ResponsesResume("resp_d"))
	resp, err := f.post(t, context.Background(), ResponsesPath, `{}`)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	status, _, _ := f.get(t, ResponsesPath+"/resp_d?stream=true&starting_after=x")
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestCutEventsZeroCutsBeforeTheBody(t *testing.T) {
	f := start(t, ResponsesBackground("resp_e", ResponsesEvents("resp_e", "x")...).CutEvents(0))
	resp, err := f.post(t, context.Background(), ResponsesPath, `{}`)
	require.NoError(t, err)
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, b)
	require.ErrorIs(t, rerr, io.ErrUnexpectedEOF)
}

func TestResponsesJSONIsACompletedResponse(t *testing.T) {
	b := ResponsesJSON("resp_f", "Hi")
	assert.Contains(t, b, `"status":"completed"`)
	assert.Contains(t, b, `"text":"Hi"`)
	assert.Contains(t, b, `"id":"resp_f"`)
}

// A header set on a Responses step (WithHeader) is sent with what the step
// plays, as on any other step.
func TestResponsesStepsKeepTheirHeaders(t *testing.T) {
	evs := ResponsesEvents("resp_h", "a")
	f := start(t,
		ResponsesBackground("resp_h", evs...).WithHeader("X-Request-Id", "req-1"),
		ResponsesRetrieve("resp_h").WithHeader("Retry-After", "2"),
	)
	resp, err := f.post(t, context.Background(), ResponsesPath, `{"background":true,"stream":true}`)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, "req-1", resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, f.srv.URL+ResponsesPath+"/resp_h", nil)
	require.NoError(t, err)
	resp, err = f.client.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "the played answer's own type")
}
