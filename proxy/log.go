package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/eventlog"
)

// requestLine is what the line of one request says beyond its method and
// path (see Handler).
type requestLine struct {
	kind        string // "completion" or "forward"
	status      int
	outcome     string // set when recovery ended without success
	clientRetry bool   // a client retry: charged to the quota, or replayed
	replayed    bool   // answered from the memory of final failures (R21.3)
	callID      string
	start       time.Time
	tally       *tally // a completion's counts (R21.7); nil on other lines
}

// logRequest writes the line of request r, "request", at level Info: kind,
// method, path (never the query), status, then outcome, client_retry,
// replayed and call_id when set, then on a completion's line attempts, and
// resumes and fallbacks when not zero (R21.7), duration_ms, and in a
// Router the route's name (route). Every
// request line of the proxy is written here.
func (h *Handler) logRequest(r *http.Request, l requestLine) {
	attrs := make([]slog.Attr, 0, 14) // room for every attribute, so that the line needs one allocation
	attrs = append(attrs, slog.String("kind", l.kind), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", l.status))
	if l.outcome != "" {
		attrs = append(attrs, slog.String("outcome", l.outcome))
	}
	if l.clientRetry {
		attrs = append(attrs, slog.Bool("client_retry", true))
	}
	if l.replayed {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	if l.callID != "" {
		attrs = append(attrs, slog.String("call_id", l.callID))
	}
	if k, ok := r.Context().Value(admittedKey{}).(*ClientKey); ok && k.Name != "" {
		attrs = append(attrs, slog.String("client", k.Name))
	}
	if t := l.tally; t != nil {
		attrs = append(attrs, slog.Int64("attempts", t.attempts.Load()))
		if n := t.resumes.Load(); n > 0 {
			attrs = append(attrs, slog.Int64("resumes", n))
		}
		if n := t.fallbacks.Load(); n > 0 {
			attrs = append(attrs, slog.Int64("fallbacks", n))
		}
	}
	attrs = append(attrs, slog.Int64("duration_ms", time.Since(l.start).Milliseconds()))
	if h.name != "" {
		attrs = append(attrs, slog.String("route", h.name))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// logEvent writes one line for a lifecycle event, with eventlog's level,
// message and attributes: the proxy and the library log events alike.
func (h *Handler) logEvent(ev event.Event) {
	level := eventlog.Level(ev.Type)
	if !h.log.Enabled(context.Background(), level) {
		return
	}
	h.log.LogAttrs(context.Background(), level, eventlog.Message, eventlog.Attrs(ev)...)
}
