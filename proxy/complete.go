package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

// complete serves the completion endpoint through the chain.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ex := &exchange{h: h}
	hw := &headWriter{ResponseWriter: w, ex: ex}
	ex.w, ex.rc = hw, http.NewResponseController(hw)
	status, outcome := h.recover(ex, r)
	if ex.release != nil {
		ex.release()
	}
	hw.finish(ex.abort)
	if ex.charged != nil {
		// A client retry's resend is refunded when it succeeded, as the
		// engine's own resends are.
		ex.charged.Settle(status/100 == 2 && outcome == "" && !ex.abort)
	}
	h.logRequest(r, requestLine{kind: "completion", status: status, outcome: outcome, clientRetry: ex.clientRetry,
		callID: ex.call.Result.LogicalID, start: start, tally: &ex.tally})
	if ex.abort {
		// The stream ended with an in-band error: close the connection
		// without the chunked terminator as well, so that a client reading
		// bytes rather than frames fails too.
		panic(http.ErrAbortHandler)
	}
}

// recover runs one completion and returns the status the client got and the
// outcome when recovery ended without success.
func (h *Handler) recover(ex *exchange, r *http.Request) (int, string) {
	out, status := h.outbound(ex, r)
	if out == nil {
		return status, ""
	}
	if ex.clientRetry {
		if status, refused := ex.charge(out); refused {
			return status, string(event.OutcomeQuotaExhausted)
		}
	}
	resp, err := h.chain.RoundTrip(out)
	if err != nil {
		if !ex.committed {
			ex.setQuotaRemaining(out, ex.model)
		}
		return ex.failed(r, err)
	}
	defer resp.Body.Close()
	ex.mu.Lock()
	ex.respBody = resp.Body
	cut := ex.shutdown
	ex.mu.Unlock()
	if cut {
		// Shutdown cut the call as its answer arrived (see cutAt).
		resp.Body.Close()
	}
	return ex.answer(out, resp)
}

// outbound reads the client's request r and returns the request the chain
// sends for it: the same method, the upstream URL, the body read once (so
// that every attempt resends the same bytes) and the client's headers
// without the hop-by-hop ones and those the transport sets. A request that
// cannot be sent is answered here: outbound then returns nil and the
// status written.
func (h *Handler) outbound(ex *exchange, r *http.Request) (*http.Request, int) {
	tooLarge := func() (*http.Request, int) {
		h.writeError(ex.w, http.StatusRequestEntityTooLarge, "request_too_large",
			"recourse-proxy: the request body is larger than the proxy's limit of "+strconv.FormatInt(h.maxBody, 10)+" bytes (-max-body); nothing was sent upstream", "")
		return nil, http.StatusRequestEntityTooLarge
	}
	if r.ContentLength > h.maxBody {
		// Refused on its header (R21.9): no body byte is read, so net/http
		// sends no 100 Continue and the client sends no body.
		return tooLarge()
	}
	var body []byte
	var err error
	if rb, ok := r.Body.(*readBody); ok {
		body = rb.unread() // read already (owned): not copied again
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, h.maxBody+1))
	}
	if err != nil {
		h.writeError(ex.w, http.StatusBadRequest, "request_body_unreadable", "recourse-proxy: the request body could not be read", "")
		return nil, http.StatusBadRequest
	}
	if int64(len(body)) > h.maxBody {
		return tooLarge()
	}
	// The chain's context ends when the request's does, but not at the
	// same instant: at shutdown the stream is closed first, so that the
	// engine writes no in-band error of its own and the proxy writes its
	// shutdown frame (R21.10).
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(r.Context(), func() { ex.cutAt(context.Cause(r.Context()), cancel) })
	ex.release = func() { stop(); cancel(nil) }
	if h.deadline > 0 {
		p := h.policy
		p.Deadline = h.now().Add(h.deadline)
		ctx = retry.WithPolicy(ctx, &p)
	}
	ex.call.Observe(ex.onEvent)
	ctx = layer.WithCall(ctx, &ex.call)
	ex.clientRetry = h.quota != nil && isClientRetry(r.Header)
	if ex.clientRetry {
		ctx = context.WithValue(ctx, clientRetryKey{}, true)
	}
	// A completion is a POST; a read of a stored response (R19.13) a GET.
	// The body is a layer.RequestBody, so that the engine keeps these
	// bytes and this header for its attempts rather than a copy of each:
	// a stream in flight holds its request once. Neither is changed
	// after the chain has the request.
	// An empty body is http.NoBody, as net/http makes it.
	var rb io.Reader = http.NoBody
	if len(body) > 0 {
		rb = layer.NewRequestBody(body)
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, h.target(r.URL).String(), rb)
	if err != nil {
		h.writeError(ex.w, http.StatusBadRequest, "bad_request", "recourse-proxy: the request URL cannot be forwarded", "")
		return nil, http.StatusBadRequest
	}
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) {
		if len(body) == 0 {
			return http.NoBody, nil
		}
		return layer.NewRequestBody(body), nil
	}
	ex.body = body
	out.Header = r.Header.Clone()
	stripHop(out.Header)
	out.Header.Del("Accept-Encoding")
	out.Header.Del("Content-Length")
	out.Header.Del("Expect")
	return out, 0
}

// answer passes the chain's response resp to out's client: its status and
// headers, unless a streaming 200 was committed already (then a failed
// status becomes an in-band error frame), and its body. It returns the
// status the client got and the outcome when recovery ended without
// success.
func (ex *exchange) answer(out *http.Request, resp *http.Response) (int, string) {
	if ex.committed {
		// The stream was committed while it waited in backoff.
		if resp.StatusCode/100 != 2 {
			msg := "recourse-proxy: recovery ended with HTTP " + strconv.Itoa(resp.StatusCode)
			if e := ex.call.Result.Err; e != nil {
				msg = e.Error()
			}
			ex.errorFrame(msg)
			ex.abort = true
			return http.StatusOK, resp.Header.Get(retry.HeaderOutcome)
		}
	} else {
		ex.writeHead(out, resp)
		if resp.ContentLength < 0 {
			// A stream's opening frames may be held until its first output
			// (R13.9): its status and headers reach the client now.
			ex.send(nil)
		}
	}
	outcome := ""
	if resp.StatusCode/100 != 2 {
		outcome = resp.Header.Get(retry.HeaderOutcome)
	}
	if rerr := ex.copy(resp.Body); rerr != nil {
		var re *layer.RecoveryError
		switch {
		case ex.isShutdown():
			outcome = string(event.OutcomeCancelled)
			ex.codedErrorFrame(codeShutdown, ErrShutdown.Error())
		case errors.As(rerr, &re):
			outcome = string(re.Outcome)
		case !errors.Is(rerr, errClientGone):
			ex.errorFrame("recourse-proxy: the stream ended without its end")
		}
		ex.abort = true
	}
	return ex.status, outcome
}

// writeHead writes resp's status and headers to the client, without the
// hop-by-hop headers, with the call's ID and the quota's remaining resends.
func (ex *exchange) writeHead(out *http.Request, resp *http.Response) {
	hd := ex.w.Header()
	for k, v := range resp.Header {
		hd[k] = v
	}
	stripHop(hd)
	if resp.ContentLength >= 0 && !resp.Uncompressed {
		hd.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	} else {
		hd.Del("Content-Length")
	}
	if id := ex.call.Result.LogicalID; id != "" {
		hd.Set(HeaderCallID, id)
	}
	ex.setQuotaRemaining(out, ex.model)
	ex.write(func() {
		ex.w.WriteHeader(resp.StatusCode)
		ex.status = resp.StatusCode
	})
}

// failed answers a completion whose round trip returned an error: a typed
// *layer.RecoveryError, or a failure before the chain ran.
func (ex *exchange) failed(r *http.Request, err error) (int, string) {
	h := ex.h
	var re *layer.RecoveryError
	if !errors.As(err, &re) {
		var pe *layer.PolicyError
		if errors.As(err, &pe) {
			h.writeError(ex.w, http.StatusInternalServerError, "policy_invalid", "recourse-proxy: "+pe.Error(), "")
			return http.StatusInternalServerError, ""
		}
		h.writeError(ex.w, http.StatusBadGateway, "proxy_error", "recourse-proxy: the completion could not be sent", "")
		return http.StatusBadGateway, ""
	}
	outcome := string(re.Outcome)
	msg, code := re.Error(), outcome
	if re.Outcome == event.OutcomeCancelled && errors.Is(context.Cause(r.Context()), ErrShutdown) {
		msg, code = ErrShutdown.Error(), codeShutdown
	}
	if ex.committed {
		ex.codedErrorFrame(code, msg)
		ex.abort = true
		return http.StatusOK, outcome
	}
	f := &re.Failure
	status := http.StatusBadGateway
	switch {
	case f.Category == event.CategoryHTTP && layer.IsRedirect(f.HTTPStatus):
		code = "redirect_refused"
	case re.Outcome == event.OutcomeCancelled, re.Outcome == event.OutcomeAdmissionRequired,
		re.Outcome == event.OutcomeAdmissionRejected, re.Outcome == event.OutcomeAdmissionNoDecision:
		status = http.StatusServiceUnavailable
	case re.Outcome == event.OutcomeDeadline:
		status = http.StatusGatewayTimeout
	case re.Outcome == event.OutcomeQuotaExhausted:
		// The proxy declined to resend: the upstream may be fine later.
		status = http.StatusServiceUnavailable
	}
	h.writeError(ex.w, status, code, msg, outcome)
	return status, outcome
}

// exchange is the state of one completion request: the response writer
// and whether the proxy has committed the response.
type exchange struct {
	h         *Handler
	w         http.ResponseWriter
	rc        *http.ResponseController
	call      layer.Call
	mu        sync.Mutex // guards writes to w
	committed bool       // a streaming 200 was written before the chain returned
	status    int        // the status written to the client, or 0
	abort     bool
	gone      bool // a write to the client failed

	clientRetry bool              // the client marked the request as its own retry, and a quota is set
	charged     layer.Reservation // the resend a client retry was charged, or nil
	model       string            // the call's model, from its events
	body        []byte            // the request body, read once
	tally       tally             // the call's attempts, resumes and fallbacks (R21.7)

	release  func()        // stops watching the request's context and ends the chain's
	respBody io.ReadCloser // the chain's answer, once it arrived; guarded by mu
	shutdown bool          // the request was cut at shutdown; guarded by mu
}

// codeShutdown is the code of the in-band error of a stream cut at the
// proxy's shutdown, and of the error document of a request cut before its
// answer (R21.10): a client tells it from a provider's failure and from a
// cancel of its own.
const codeShutdown = "shutdown"

// cutAt ends the chain's context with cause when the request's context
// ended. At shutdown it closes the chain's answer first, if one arrived:
// the engine then hands out no in-band error of its own, and answer writes
// the shutdown frame.
func (ex *exchange) cutAt(cause error, cancel context.CancelCauseFunc) {
	if errors.Is(cause, ErrShutdown) {
		ex.mu.Lock()
		ex.shutdown = true
		body := ex.respBody
		ex.mu.Unlock()
		if body != nil {
			body.Close()
		}
	}
	cancel(cause)
}

// isShutdown reports whether the request was cut at shutdown.
func (ex *exchange) isShutdown() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.shutdown
}

var errClientGone = errors.New("recourse-proxy: the client went away")

// write runs f under the write lock.
func (ex *exchange) write(f func()) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	f()
}

// send writes p and flushes it; it reports false once the client is gone.
func (ex *exchange) send(p []byte) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.gone {
		return false
	}
	if _, err := ex.w.Write(p); err != nil {
		ex.gone = true
		return false
	}
	if err := ex.rc.Flush(); err != nil {
		ex.gone = true
		return false
	}
	return true
}

// copy forwards body to the client, flushing every read (whole frames up
// to firstBufSize bytes, and larger ones in reads of up to copyBufSize,
// for a recovering stream). It returns nil at the end of the body, the
// body's read error, or errClientGone.
func (ex *exchange) copy(body io.Reader) error {
	small := firstBufs.Get().(*[]byte)
	defer firstBufs.Put(small)
	var big *[]byte // while reads fill the buffer
	defer func() {
		if big != nil {
			copyBufs.Put(big)
		}
	}()
	buf := *small
	for {
		n, err := body.Read(buf)
		if n > 0 && !ex.send(buf[:n]) {
			return errClientGone
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case n == len(buf) && big == nil:
			// A large frame or answer: read the rest in larger reads.
			big = copyBufs.Get().(*[]byte)
			buf = *big
		case n < len(buf) && big != nil:
			// Its end: wait for the next frame holding the small buffer.
			copyBufs.Put(big)
			big, buf = nil, *small
		}
	}
}

// errorFrame writes the codec's in-band error frame carrying msg.
func (ex *exchange) errorFrame(msg string) {
	if ef, ok := ex.h.codec.(codec.ErrorFramer); ok {
		ex.send(ef.ErrorFrame(msg))
	}
}

// codedErrorFrame writes the codec's in-band error frame carrying code and
// msg (codec.CodedErrorFramer), or msg alone in a dialect without codes.
func (ex *exchange) codedErrorFrame(code, msg string) {
	if cf, ok := ex.h.codec.(codec.CodedErrorFramer); ok {
		ex.send(cf.ErrorFrameCode(code, msg))
		return
	}
	ex.errorFrame(msg)
}

// onEvent logs a lifecycle event and, for a stream waiting in backoff,
// writes a notice: at once when the response is already committed (a
// stream resumed after its 200), otherwise after committing it when the
// wait is long enough (see Config.StreamCommitAfter).
func (ex *exchange) onEvent(ev event.Event) {
	ex.tally.count(ev)
	ex.h.logEvent(ev)
	if ex.model == "" {
		ex.model = ev.Model
	}
	if (ev.Type != event.DelayScheduled && ev.Type != event.CooldownWait) || ev.Operation != codec.Streaming || !ex.h.comments {
		return
	}
	if ex.status == 0 {
		if ex.h.commitAfter < 0 || ev.Elapsed+ev.Delay < ex.h.commitAfter {
			return
		}
		ex.commit(ev.LogicalID)
	}
	ex.send([]byte(notice(ev)))
}

// commit writes a streaming 200 before the chain has returned. Only a
// stream whose dialect has comment lines is committed early (onEvent), so
// the content type is SSE's.
func (ex *exchange) commit(callID string) {
	ex.write(func() {
		hd := ex.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set(HeaderCallID, callID)
		ex.w.WriteHeader(http.StatusOK)
		ex.committed = true
		ex.status = http.StatusOK
	})
}

// notice returns the SSE comment line announcing a scheduled retry in the
// broker's wording (R21.6: event.Failure.Text, layer.FormatDelay), for
// example ": retrying after HTTP 503 (attempt 2/4 in 1.2s)\n"; a resume of
// a background stream, ": resuming after transport error from event 5
// (attempt 2/4 in 100ms)\n" ("from the start" when no event carried a
// sequence number); or a first attempt held by the shared cooldown,
// ": waiting for the upstream's shared cooldown (attempt 1/4 in 2.0s)\n".
func notice(ev event.Event) string {
	tail := " (attempt " + strconv.Itoa(ev.NextAttempt) + "/" + strconv.Itoa(ev.MaxAttempts) + " in " + layer.FormatDelay(ev.Delay) + ")\n"
	if ev.Type == event.CooldownWait {
		return ": waiting for the upstream's shared cooldown" + tail
	}
	what := ev.Failure.Text()
	if ev.Resume != nil {
		// A background stream read again from its cursor (R19.10).
		from := "the start"
		if ev.Resume.Cursor >= 0 {
			from = "event " + strconv.FormatInt(ev.Resume.Cursor, 10)
		}
		return ": resuming after " + what + " from " + from + tail
	}
	return ": retrying after " + what + tail
}

// readBody is a client's request body the proxy has read already (owned,
// to key it): outbound takes its unread bytes as they are instead of
// reading them into a copy, so that a completion holds its body once.
type readBody struct {
	*bytes.Reader
	b []byte
}

// Close does nothing: the body is in memory.
func (*readBody) Close() error { return nil }

// unread returns the bytes not read yet.
func (r *readBody) unread() []byte { return r.b[len(r.b)-r.Len():] }
