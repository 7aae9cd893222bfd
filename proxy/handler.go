package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
)

// HeaderCallID is the response header naming the logical call of a
// completion, the call_id of the proxy's log lines.
const HeaderCallID = "X-Recourse-Call-Id"

// ErrShutdown is the cause of the context of a request cut at shutdown,
// after the grace period (see Serve).
var ErrShutdown = errors.New("recourse-proxy: shutting down: the call was cut after the grace period")

// Handler is the recovery proxy for one provider and one upstream. It is
// immutable after New and safe for concurrent use.
//
// It logs, on the Config's Logger, one line per request (message
// "request"; attributes kind "completion" or "forward", method, path — the
// URL path only, never the query —, status, outcome when recovery ended
// without success, client_retry when a client retry was charged to the
// quota, call_id, duration_ms) and one line per lifecycle event of a
// completion exactly as package eventlog writes it (message
// eventlog.Message, level eventlog.Level, attributes eventlog.Attrs: type,
// logical_request_id — the call_id of the request line —, attempt_id,
// wire_attempt, max_attempts, provider, operation, model, and when set
// http_status, delay_ms, next_attempt, the quota group and the failure
// group with category, reason, stall, hint and retry_after_header). No
// line holds a header value, a body or a credential.
type Handler struct {
	codec       layer.Codec
	provider    string
	upstream    *url.URL
	chain       *chain.Chain
	forward     *httputil.ReverseProxy
	policy      retry.Policy
	deadline    time.Duration
	maxBody     int64
	commitAfter time.Duration // < 0: never
	sse         bool          // the stream dialect has comment lines
	quota       *quota.Layer  // nil: none
	log         *slog.Logger
	now         func() time.Time
	responses   *Handler                           // the Responses API of an openai proxy, or nil
	finals      *finals                            // nil: every request goes through (Config.RepeatWindow < 0)
	onRetry     func(context.Context, ClientRetry) // Config.OnClientRetry
}

// New returns the Handler for cfg, or a *ConfigError naming an invalid
// field, the chain's *layer.PolicyError for an invalid policy, or its
// *chain.CompositionError for a PerCall layer of another position.
func New(cfg Config) (*Handler, error) {
	codec, err := codecFor(cfg.Provider)
	if err != nil {
		return nil, err
	}
	up, err := parseUpstream(cfg.Upstream, codec)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, &ConfigError{Field: "MaxBodyBytes", Problem: "is negative"}
	}
	if cfg.Deadline < 0 {
		return nil, &ConfigError{Field: "Deadline", Problem: "is negative"}
	}
	base := cfg.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ForceAttemptHTTP2 = false
		t.MaxIdleConnsPerHost = 64
		base = t
	}
	h := &Handler{
		codec:       codec,
		provider:    cfg.Provider,
		upstream:    up,
		policy:      cfg.Policy,
		deadline:    cfg.Deadline,
		maxBody:     cfg.MaxBodyBytes,
		commitAfter: cfg.StreamCommitAfter,
		sse:         cfg.Provider != "ollama",
		quota:       cfg.Quota,
		log:         cfg.Logger,
		now:         cfg.Now,
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.commitAfter == 0 {
		h.commitAfter = DefaultStreamCommitAfter
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = cfg.Policy.WallClock
	}
	if h.now == nil {
		h.now = time.Now
	}
	switch {
	case cfg.RepeatWindow == 0:
		h.finals = newFinals(DefaultRepeatWindow, h.now)
	case cfg.RepeatWindow > 0:
		h.finals = newFinals(cfg.RepeatWindow, h.now)
	}
	h.onRetry = cfg.OnClientRetry
	perCall := cfg.PerCall[:len(cfg.PerCall):len(cfg.PerCall)]
	if fl, err := fallbackLayer(&cfg, codec); err != nil {
		return nil, err
	} else if fl != nil {
		perCall = append(perCall, fl)
	}
	if cfg.Quota != nil {
		perCall = append(perCall, cfg.Quota, layer.NewPerCall("client-retries", keepClientRetriesFromDepositing))
	}
	h.chain, err = chain.Default(codec, chain.WithPolicy(cfg.Policy), chain.WithTransport(base),
		chain.WithPerCall(perCall...), chain.WithPerAttempt(cfg.PerAttempt...))
	if err != nil {
		return nil, err
	}
	h.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = h.target(pr.In.URL)
			pr.Out.Host = ""
			if pr.Out.Body != nil {
				pr.Out.Body = &forwardBody{rc: pr.Out.Body}
			}
		},
		Transport:      base,
		FlushInterval:  -1,
		ModifyResponse: refuseRedirect,
		ErrorHandler:   h.forwardFailed,
		ErrorLog:       slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	if cfg.Provider == "openai" {
		if h.responses, err = h.withResponses(base, perCall, cfg.PerAttempt); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// target returns the upstream URL for a client's request URL: the
// upstream root, then the client's path and query.
func (h *Handler) target(in *url.URL) *url.URL {
	u := *h.upstream
	u.Path = h.upstream.Path + in.Path
	if in.RawPath != "" {
		u.RawPath = h.upstream.Path + in.RawPath
	}
	u.RawQuery = in.RawQuery
	return &u
}

// ServeHTTP serves one client request (see the package documentation).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ok\n")
	case r.URL.Path == h.codec.Path() && r.Method == http.MethodPost:
		h.owned(w, r)
	case h.responses != nil && h.responses.routes(r):
		h.responses.owned(w, r)
	default:
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.forward.ServeHTTP(rec, r)
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("kind", "forward"), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Int64("duration_ms", time.Since(start).Milliseconds()))
	}
}

// errRedirect is what ModifyResponse returns for an upstream redirect.
type errRedirect struct{ status int }

func (e *errRedirect) Error() string {
	return "recourse-proxy: the upstream answered HTTP " + strconv.Itoa(e.status) + ", a redirect: refused, its Location never contacted"
}

func refuseRedirect(resp *http.Response) error {
	if layer.IsRedirect(resp.StatusCode) {
		return &errRedirect{status: resp.StatusCode}
	}
	return nil
}

// forwardFailed answers a forwarded request that got no usable answer.
func (h *Handler) forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	var rd *errRedirect
	if errors.As(err, &rd) {
		h.writeError(w, http.StatusBadGateway, "redirect_refused", rd.Error(), "")
		return
	}
	if r.Context().Err() != nil {
		// The client went away, or the proxy cut the request at shutdown.
		h.writeError(w, http.StatusServiceUnavailable, "cancelled", "recourse-proxy: the request was cancelled before the upstream answered", "")
		return
	}
	h.writeError(w, http.StatusBadGateway, "upstream_unreachable", "recourse-proxy: the upstream could not be reached (forwarded once, not retried)", "")
}

// writeError writes a proxy error in the provider's dialect. outcome, when
// set, is sent as X-Recourse-Outcome, with X-Should-Retry: false.
func (h *Handler) writeError(w http.ResponseWriter, status int, code, msg, outcome string) {
	hd := w.Header()
	hd.Del("Location")
	hd.Set("Content-Type", "application/json")
	hd.Set(retry.HeaderShouldRetry, "false")
	if outcome != "" {
		hd.Set(retry.HeaderOutcome, outcome)
	}
	body := errorBody(h.provider, code, msg)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// errorBody returns an error document in the provider's dialect: OpenAI's
// {"error":{"message","type","param","code"}} or Ollama's {"error":msg}.
func errorBody(provider, code, msg string) []byte {
	var b bytes.Buffer
	if provider == "ollama" {
		b.WriteString(`{"error":`)
		b.Write(jsonString(msg))
		b.WriteString("}\n")
		return b.Bytes()
	}
	b.WriteString(`{"error":{"message":`)
	b.Write(jsonString(msg))
	b.WriteString(`,"type":"recourse_error","param":null,"code":`)
	b.Write(jsonString(code))
	b.WriteString("}}\n")
	return b.Bytes()
}

func jsonString(s string) []byte {
	b := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not
// forward, as net/http/httputil.ReverseProxy drops them.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHop removes the hop-by-hop headers from h, including those the
// Connection header names.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// complete serves the completion endpoint through the chain.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ex := &exchange{h: h, w: w, rc: http.NewResponseController(w)}
	status, outcome := h.recover(ex, r)
	if ex.charged != nil {
		// A client retry's resend is refunded when it succeeded, as the
		// engine's own resends are.
		ex.charged.Settle(status/100 == 2 && outcome == "" && !ex.abort)
	}
	attrs := make([]slog.Attr, 0, 7) // room for every attribute, so that the line needs one allocation
	attrs = append(attrs, slog.String("kind", "completion"), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", status))
	if outcome != "" {
		attrs = append(attrs, slog.String("outcome", outcome))
	}
	if ex.clientRetry {
		attrs = append(attrs, slog.Bool("client_retry", true))
	}
	if ex.call.Result.LogicalID != "" {
		attrs = append(attrs, slog.String("call_id", ex.call.Result.LogicalID))
	}
	attrs = append(attrs, slog.Int64("duration_ms", time.Since(start).Milliseconds()))
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
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
	body, err := io.ReadAll(io.LimitReader(r.Body, h.maxBody+1))
	if err != nil {
		h.writeError(ex.w, http.StatusBadRequest, "request_body_unreadable", "recourse-proxy: the request body could not be read", "")
		return http.StatusBadRequest, ""
	}
	if int64(len(body)) > h.maxBody {
		h.writeError(ex.w, http.StatusRequestEntityTooLarge, "request_too_large",
			"recourse-proxy: the request body is larger than the proxy's limit of "+strconv.FormatInt(h.maxBody, 10)+" bytes (-max-body); nothing was sent upstream", "")
		return http.StatusRequestEntityTooLarge, ""
	}
	ctx := r.Context()
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
	out, err := http.NewRequestWithContext(ctx, r.Method, h.target(r.URL).String(), bytes.NewReader(body))
	if err != nil {
		h.writeError(ex.w, http.StatusBadRequest, "bad_request", "recourse-proxy: the request URL cannot be forwarded", "")
		return http.StatusBadRequest, ""
	}
	out.Header = r.Header.Clone()
	stripHop(out.Header)
	out.Header.Del("Accept-Encoding")
	out.Header.Del("Content-Length")
	out.Header.Del("Expect")
	if ex.clientRetry {
		if status, refused := ex.charge(out, body); refused {
			return status, string(layer.OutcomeQuotaExhausted)
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
	outcome := ""
	if resp.StatusCode/100 != 2 {
		outcome = resp.Header.Get(retry.HeaderOutcome)
	}
	if rerr := ex.copy(resp.Body); rerr != nil {
		var re *layer.RecoveryError
		if errors.As(rerr, &re) {
			outcome = string(re.Outcome)
		} else if !errors.Is(rerr, errClientGone) {
			ex.errorFrame("recourse-proxy: the stream ended without its end")
		}
		ex.abort = true
	}
	return ex.status, outcome
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
	msg := re.Error()
	if re.Outcome == layer.OutcomeCancelled && errors.Is(context.Cause(r.Context()), ErrShutdown) {
		msg = ErrShutdown.Error()
	}
	if ex.committed {
		ex.errorFrame(msg)
		ex.abort = true
		return http.StatusOK, outcome
	}
	f := &re.Failure
	status, code := http.StatusBadGateway, outcome
	switch {
	case f.Category == layer.CategoryHTTP && layer.IsRedirect(f.HTTPStatus):
		code = "redirect_refused"
	case re.Outcome == layer.OutcomeCancelled, re.Outcome == layer.OutcomeAdmissionRequired,
		re.Outcome == layer.OutcomeAdmissionRejected, re.Outcome == layer.OutcomeAdmissionNoDecision:
		status = http.StatusServiceUnavailable
	case re.Outcome == layer.OutcomeDeadline:
		status = http.StatusGatewayTimeout
	case re.Outcome == layer.OutcomeQuotaExhausted:
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
}

// HeaderQuotaRemaining is the response header, sent with a retry quota
// (Config.Quota), that says how many resends the quota of the call's
// upstream allows now in this process (layers/quota Layer.Remaining; -1
// for an unlimited quota). It is set whenever the proxy writes a
// completion's status after the chain answered, so not on a stream
// committed early.
const HeaderQuotaRemaining = "X-Recourse-Quota-Remaining"

// setQuotaRemaining sets HeaderQuotaRemaining for out's upstream.
func (ex *exchange) setQuotaRemaining(out *http.Request, model string) {
	if q := ex.h.quota; q != nil {
		ex.w.Header().Set(HeaderQuotaRemaining, strconv.Itoa(q.Remaining(out.URL, model, out.Header)))
	}
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

// copy forwards body to the client, flushing every read (whole frames, for
// a recovering stream). It returns nil at the end of the body, the body's
// read error, or errClientGone.
func (ex *exchange) copy(body io.Reader) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
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
	}
}

// errorFrame writes the codec's in-band error frame carrying msg.
func (ex *exchange) errorFrame(msg string) {
	if ef, ok := ex.h.codec.(layer.ErrorFramer); ok {
		ex.send(ef.ErrorFrame(msg))
	}
}

// onEvent logs a lifecycle event and, for a stream waiting in backoff,
// writes a notice: at once when the response is already committed (a
// stream resumed after its 200), otherwise after committing it when the
// wait is long enough (see Config.StreamCommitAfter).
func (ex *exchange) onEvent(ev layer.Event) {
	ex.h.logEvent(ev)
	if ex.model == "" {
		ex.model = ev.Model
	}
	if (ev.Type != layer.EventDelayScheduled && ev.Type != layer.EventCooldownWait) || ev.Operation != layer.Streaming || !ex.h.sse {
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

// commit writes a streaming 200 before the chain has returned.
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

// HeaderClientRetryCount is the request header in which OpenAI's SDKs (and
// the other Stainless-generated SDKs) number their own retries: absent or 0
// on a first request, 1 on the first retry.
const HeaderClientRetryCount = "X-Stainless-Retry-Count"

// isClientRetry reports whether the client marked the request as a retry of
// its own: an X-Stainless-Retry-Count above 0.
func isClientRetry(h http.Header) bool {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get(HeaderClientRetryCount)))
	return err == nil && n > 0
}

// clientRetryKey marks the context of a client retry's call.
type clientRetryKey struct{}

// keepClientRetriesFromDepositing is the per-call stage inside the quota:
// a client retry was charged as a resend by the handler, so its call must
// not also deposit as a new call.
func keepClientRetriesFromDepositing(next http.RoundTripper) http.RoundTripper {
	return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Context().Value(clientRetryKey{}) != nil {
			if c := layer.CallFrom(req.Context()); c != nil && c.Gate != nil {
				c.Gate = noDeposit{c.Gate}
			}
		}
		return next.RoundTrip(req)
	})
}

// noDeposit is a resend gate whose upstreams record no deposit.
type noDeposit struct{ g layer.ResendGate }

func (n noDeposit) Bind(u *url.URL, model string, h http.Header) layer.UpstreamGate {
	return noDepositUpstream{n.g.Bind(u, model, h)}
}

type noDepositUpstream struct{ layer.UpstreamGate }

func (noDepositUpstream) Deposit() {}

// charge withdraws one resend from the quota for a client retry before it
// is sent. Refused, it answers 503 quota_exhausted and reports true; the
// upstream is not contacted. A shared store that does not answer fails
// open, as in the engine.
func (ex *exchange) charge(out *http.Request, body []byte) (int, bool) {
	h := ex.h
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m) // a body without a model keys the quota by upstream alone, as the engine does
	res, v := h.quota.Bind(out.URL, m.Model, out.Header).Reserve(out.Context())
	if v.Refusal != nil {
		h.clientRetry(out.Context(), ClientRetryRefused)
		ex.setQuotaRemaining(out, m.Model)
		h.writeError(ex.w, http.StatusServiceUnavailable, string(layer.OutcomeQuotaExhausted),
			"recourse-proxy: not sent: the request is a client retry ("+HeaderClientRetryCount+" above 0), charged as a resend, and the "+
				v.Refusal.Text(), string(layer.OutcomeQuotaExhausted))
		return http.StatusServiceUnavailable, true
	}
	if v.Unavailable {
		h.log.LogAttrs(out.Context(), eventlog.Level(layer.EventQuotaUnavailable), eventlog.Message,
			slog.String("type", string(layer.EventQuotaUnavailable)), slog.Bool("client_retry", true))
	}
	h.clientRetry(out.Context(), ClientRetryCharged)
	ex.charged = res
	return 0, false
}

// notice returns the SSE comment line announcing a scheduled retry, for
// example ": retrying after HTTP 503 (attempt 2/4 in 1.2s)\n", a resume
// of a background stream, ": resuming after a transport failure from
// event 5 (attempt 2/4 in 100ms)\n", or a first
// attempt held by the shared cooldown, ": waiting for the upstream's shared
// cooldown (attempt 1/4 in 2s)\n".
func notice(ev layer.Event) string {
	if ev.Type == layer.EventCooldownWait {
		return ": waiting for the upstream's shared cooldown (attempt " + strconv.Itoa(ev.NextAttempt) + "/" + strconv.Itoa(ev.MaxAttempts) +
			" in " + roundDelay(ev.Delay).String() + ")\n"
	}
	what := "a failure"
	if f := ev.Failure; f != nil {
		switch {
		case f.Stall != "":
			what = f.Stall.Text()
		case f.Category == layer.CategoryHTTP && f.HTTPStatus != 0:
			what = "HTTP " + strconv.Itoa(f.HTTPStatus)
		case f.Category != "":
			what = "a " + strings.ReplaceAll(string(f.Category), "_", " ") + " failure"
		}
	}
	verb := ": retrying after "
	if ev.Resume != nil {
		// A background stream read again from its cursor (R19.10).
		verb = ": resuming after " + what + " from event " + strconv.FormatInt(ev.Resume.Cursor, 10)
		what = ""
	}
	return verb + what + " (attempt " + strconv.Itoa(ev.NextAttempt) + "/" + strconv.Itoa(ev.MaxAttempts) +
		" in " + roundDelay(ev.Delay).String() + ")\n"
}

// roundDelay rounds d for display: to 100 ms from one second up, to the
// millisecond below.
func roundDelay(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// logEvent writes one line for a lifecycle event, with eventlog's level,
// message and attributes: the proxy and the library log events alike.
func (h *Handler) logEvent(ev layer.Event) {
	level := eventlog.Level(ev.Type)
	if !h.log.Enabled(context.Background(), level) {
		return
	}
	h.log.LogAttrs(context.Background(), level, eventlog.Message, eventlog.Attrs(ev)...)
}

// statusRecorder remembers the status a forwarded response was given.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// forwardBody is the body of a forwarded request. Having copied a
// request's declared length, net/http's Transport reads the body once more
// to check that nothing follows; meanwhile the proxy's own server, writing
// the response headers, has closed the client's request body
// (golang/go#40747). That late read then fails with "invalid Read on
// closed Body", and the Transport tears down the upstream connection in the
// middle of a streaming answer. A forwardBody that has already returned
// io.EOF keeps answering io.EOF after Close; one closed before its end
// still fails.
type forwardBody struct {
	rc     io.ReadCloser
	mu     sync.Mutex
	eof    bool
	closed bool
}

var errForwardBodyClosed = errors.New("recourse-proxy: read of a forwarded request body after it was closed")

func (b *forwardBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	eof, closed := b.eof, b.closed
	b.mu.Unlock()
	if eof {
		return 0, io.EOF
	}
	if closed {
		return 0, errForwardBodyClosed
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
	}
	return n, err
}

// Close marks the body closed; the server closes the client's body when
// the handler returns.
func (b *forwardBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
