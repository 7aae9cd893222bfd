package retry_test

// A provider's documented finish is the provider's answer for a drop-in
// client (R13.3, R19.4): a length finish, a content-filter finish, a
// response.incomplete reach it as sent and end cleanly, never retried,
// while the typed API keeps them incomplete completions.

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// finishRow is a provider and a stream it ends with a documented finish
// other than an accepted one.
type finishRow struct {
	p      exProv
	frames []string
	finish string // the finish reason the call's evidence keeps
}

func finishRows() []finishRow {
	var rows []finishRow
	for _, p := range exProviders() {
		frames := p.length("abc")
		if !p.ndjson {
			frames = append(frames, recoursetest.StreamDone)
		}
		rows = append(rows, finishRow{p, frames, "length"})
	}
	openaiRow := exProviders()[0]
	filtered := recoursetest.OpenAIStreamFinish("content_filter", "abc")
	rows = append(rows, finishRow{exProv{name: "openai_content_filter", codec: openaiRow.codec, model: openaiRow.model}, filtered, "content_filter"})
	resp := exProv{name: "responses", codec: func() codec.Codec { return responses.New() }, model: "gpt-4.1-mini"}
	rows = append(rows, finishRow{resp, recoursetest.ResponsesIncompleteEvents("resp_i", "max_output_tokens", "abc"), "length"})
	return rows
}

// TestR13_3_DropInDocumentedFinishPassesThrough: a drop-in stream that
// ends on the provider's own limit reaches the client byte for byte — the
// finishing chunk, [DONE] or response.incomplete — and ends cleanly: no
// in-band error frame, no read error, one request, and the call succeeds
// with the finish reason in its evidence, as the same unary answer does.
func TestR13_3_DropInDocumentedFinishPassesThrough(t *testing.T) {
	for _, row := range finishRows() {
		t.Run(row.p.name, func(t *testing.T) {
			r, rec := exRig(t, row.p.codec(), exPolicy(), row.p.step(row.frames...), row.p.step(row.frames...))
			lc := &layer.Call{}
			resp, err := exDropIn(t, layer.WithCall(context.Background(), lc), r.Server.URL, r.HTTP, row.p)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err, "a clean end")
			assert.Equal(t, strings.Join(row.frames, ""), string(b), "as the provider sent it")
			assert.NotContains(t, string(b), "recourse_error")
			assert.Nil(t, lc.Result.Err)
			assert.Equal(t, row.finish, lc.Result.Response.FinishReason)
			assert.Equal(t, 1, r.Server.Count(), "never retried")
			types := exLifecycle(rec.Types())
			require.NotEmpty(t, types)
			assert.Equal(t, []string{"attempt_started", "attempt_succeeded"}, types)
		})
	}
}

// TestR13_3_TypedLengthFinishStaysIncomplete: the same streams through
// the typed API still end with the incomplete_completion error, never
// retried, their tool calls never complete.
func TestR13_3_TypedLengthFinishStaysIncomplete(t *testing.T) {
	for _, row := range finishRows() {
		t.Run(row.p.name, func(t *testing.T) {
			r, _ := exRig(t, row.p.codec(), exPolicy(), row.p.step(row.frames...), row.p.step(row.frames...))
			run := exCollect(r.Client.Stream(context.Background(), row.p.request(), client.WithToolFragments()))
			re := exRE(t, run.err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			ev := exEvidence(t, re)
			var se *layer.StreamError
			require.ErrorAs(t, ev.Cause, &se)
			assert.Equal(t, layer.StreamIncompleteCompletion, se.Reason)
			assert.Equal(t, row.finish, se.FinishReason)
			assert.False(t, run.done())
			assert.Equal(t, 1, r.Server.Count())
		})
	}
}
