package proxy

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/recourse-dev/recourse/event"
)

// The response headers that count what a completion's answer took
// (R21.7). On a stream whose status left before recovery ended they count
// what had been sent by then, and the stream's trailer, when it ends
// cleanly, has the final counts; the request line always has them.
const (
	// HeaderAttempts is the number of wire attempts the answer took, on
	// every fallback target, resume reads included: "1" for a first-time
	// answer, "0" for an answer sent without contacting the upstream (a
	// refusal, a repeat from memory).
	HeaderAttempts = "X-Recourse-Attempts"
	// HeaderResumes is the number of those attempts that were resume reads
	// of a background stream (R19.10); absent when none.
	HeaderResumes = "X-Recourse-Resumes"
	// HeaderFallbacks is the number of times the call fell back to its
	// next fallback target (R20); absent when none.
	HeaderFallbacks = "X-Recourse-Fallbacks"
)

// tally counts a completion's wire attempts, resumes and fallbacks from its
// lifecycle events. It is safe for concurrent use.
type tally struct {
	attempts, resumes, fallbacks atomic.Int64
}

// count counts one lifecycle event.
func (t *tally) count(ev event.Event) {
	switch ev.Type {
	case event.AttemptStarted:
		t.attempts.Add(1)
		if ev.Resume != nil {
			t.resumes.Add(1)
		}
	case event.Fallback:
		t.fallbacks.Add(1)
	}
}

// set writes the counts to hd: HeaderAttempts always, the other two when
// not zero.
func (t *tally) set(hd http.Header) {
	hd.Set(HeaderAttempts, strconv.FormatInt(t.attempts.Load(), 10))
	for _, c := range []struct {
		name string
		n    int64
	}{{HeaderResumes, t.resumes.Load()}, {HeaderFallbacks, t.fallbacks.Load()}} {
		if c.n > 0 {
			hd.Set(c.name, strconv.FormatInt(c.n, 10))
		} else {
			hd.Del(c.name)
		}
	}
}

// countTrailers is the Trailer declaration of an answer whose length is not
// known when its status is written: a stream.
const countTrailers = HeaderAttempts + ", " + HeaderResumes + ", " + HeaderFallbacks

// headWriter is a completion's response writer: as the status is written
// it sets the counts so far and, on a 2xx answer of unknown length,
// declares them as trailers, which complete sets to the final counts.
type headWriter struct {
	http.ResponseWriter
	ex       *exchange
	wrote    bool
	trailers bool // the counts were declared as trailers
}

func (w *headWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		hd := w.Header()
		w.ex.tally.set(hd)
		if code/100 == 2 && hd.Get("Content-Length") == "" {
			hd.Set("Trailer", countTrailers)
			w.trailers = true
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish sets the final counts as the trailers declared, unless the answer
// was cut (abort): no trailer follows an in-band error.
func (w *headWriter) finish(abort bool) {
	if w.trailers && !abort {
		w.ex.tally.set(w.Header())
	}
}
