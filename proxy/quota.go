package proxy

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/eventlog"
	"github.com/recourse-dev/recourse/layer"
)

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

var _ layer.BreakerGate = noDepositUpstream{}

func (noDepositUpstream) Deposit() {}

// Changed and Ended keep the upstream's breaker in view for a client
// retry too (R20.13).
func (n noDepositUpstream) Changed(now time.Time) (event.BreakerState, bool) {
	if bg, ok := n.UpstreamGate.(layer.BreakerGate); ok {
		return bg.Changed(now)
	}
	return event.BreakerState{}, false
}

func (n noDepositUpstream) Ended(skipped, failed bool) {
	if bg, ok := n.UpstreamGate.(layer.BreakerGate); ok {
		bg.Ended(skipped, failed)
	}
}

// charge withdraws one resend from the quota for a client retry before it
// is sent. Refused, it answers 503 quota_exhausted and reports true; the
// upstream is not contacted. A shared store that does not answer fails
// open, as in the engine.
func (ex *exchange) charge(out *http.Request) (int, bool) {
	h := ex.h
	// The model as the engine reads it; a body the codec cannot describe
	// keys the quota by upstream alone, as in the engine.
	info, _ := codec.DescribeRequest(h.codec, out.URL, ex.body)
	model := info.Model
	res, v := h.quota.Bind(out.URL, model, out.Header).Reserve(out.Context())
	if v.Refusal != nil {
		h.clientRetry(out.Context(), ClientRetryRefused)
		ex.setQuotaRemaining(out, model)
		h.writeError(ex.w, http.StatusServiceUnavailable, string(event.OutcomeQuotaExhausted),
			"recourse-proxy: not sent: the request is a client retry ("+HeaderClientRetryCount+" above 0), charged as a resend, and the "+
				v.Refusal.Text(), string(event.OutcomeQuotaExhausted))
		return http.StatusServiceUnavailable, true
	}
	if v.Unavailable {
		h.log.LogAttrs(out.Context(), eventlog.Level(event.QuotaUnavailable), eventlog.Message,
			slog.String("type", string(event.QuotaUnavailable)), slog.Bool("client_retry", true))
	}
	h.clientRetry(out.Context(), ClientRetryCharged)
	ex.charged = res
	return 0, false
}
