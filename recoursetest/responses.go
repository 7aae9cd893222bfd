package recoursetest

import "github.com/recourse-dev/recourse/internal/scripted"

// The path of the Responses API.
const (
	// ResponsesPath is the path of OpenAI's Responses API create endpoint,
	// "/v1/responses"; a stored response is read at ResponsesPath + "/" + id.
	ResponsesPath = "/v1/responses"
)

// ResponsesEvents returns the Server-Sent Events of a streamed Responses
// API response id of model OpenAIModel, each a whole "event: …\ndata:
// …\n\n" event carrying a sequence_number counted from 0: four lifecycle
// events (response.created, response.in_progress, a message's
// output_item.added and content_part.added), one
// response.output_text.delta per element of content (the i-th, counting
// from 0, is event 4+i), the …done events and response.completed. Play it
// with SSE (a foreground stream) or ResponsesBackground.
func ResponsesEvents(id string, content ...string) []string {
	return scripted.ResponsesEvents(id, content...)
}

// ResponsesJSON returns a complete Responses API response object id with
// status completed whose one message holds content. Play it with
// JSON(200, ResponsesJSON(id, content)).
func ResponsesJSON(id, content string) string {
	return scripted.ResponsesJSON(id, content)
}

// ResponsesBackground returns an HTTP 200 text/event-stream step that
// answers a background create with events and keeps them as the
// server-side event log of response id, from the moment the step is
// played, so that later ResponsesResume, ResponsesRetrieve and
// ResponsesCancel steps find it. Cut it with CutEvents to break the stream
// after some events.
func ResponsesBackground(id string, events ...string) Step {
	return Step{scripted.ResponsesBackground(id, events...)}
}

// ResponsesResume returns a step answering a read of response id's event
// stream, GET /v1/responses/{id}?stream=true&starting_after=N: the logged
// events whose sequence_number is greater than N (all of them without
// starting_after). An unknown id is answered 404, a starting_after that is
// not an integer 400.
func ResponsesResume(id string) Step {
	return Step{scripted.ResponsesResume(id)}
}

// ResponsesRetrieve returns a step answering GET /v1/responses/{id} (a
// poll) with the response object as its log last carried it: in_progress
// until the log holds response.completed, cancelled after ResponsesCancel.
// An unknown id is answered 404.
func ResponsesRetrieve(id string) Step {
	return Step{scripted.ResponsesRetrieve(id)}
}

// ResponsesCancel returns a step answering POST /v1/responses/{id}/cancel:
// the response is marked cancelled (Server.Cancelled reports it) and the
// answer is its object with status cancelled. An unknown id is answered
// 404.
func ResponsesCancel(id string) Step {
	return Step{scripted.ResponsesCancel(id)}
}

// CutEvents returns a copy of s that aborts the connection right after its
// first n events (chunks) were written, so the client has exactly those
// events and reads io.ErrUnexpectedEOF; n zero or less cuts right after the
// headers. For a ResponsesResume step the count is of the events it plays.
func (s Step) CutEvents(n int) Step {
	return Step{s.step.CutEvents(n)}
}

// Cancelled reports whether a ResponsesCancel step cancelled response id.
func (s *Server) Cancelled(id string) bool {
	return s.srv.Cancelled(id)
}
