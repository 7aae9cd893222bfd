package proxy

import "context"

// ClientRetry is how the proxy answered a request that a client sent again
// on its own after the proxy had already recovered, or given up on, the
// same call (see Config.OnClientRetry).
type ClientRetry string

// The answers to a client retry.
const (
	// ClientRetryReplayed is a repeat of a final failure, answered from
	// memory without contacting the upstream (Config.RepeatWindow, R21.3).
	ClientRetryReplayed ClientRetry = "replayed"
	// ClientRetryCharged is a request its SDK marked as a retry
	// (X-Stainless-Retry-Count above 0), charged to the retry quota as a
	// resend and sent upstream.
	ClientRetryCharged ClientRetry = "charged"
	// ClientRetryRefused is such a request the quota refused, answered 503
	// quota_exhausted without contacting the upstream.
	ClientRetryRefused ClientRetry = "refused"
)

// ClientRetries lists every ClientRetry, for a metric's fixed label set.
var ClientRetries = []ClientRetry{ClientRetryReplayed, ClientRetryCharged, ClientRetryRefused}

// clientRetry reports one client retry to Config.OnClientRetry, if set.
func (h *Handler) clientRetry(ctx context.Context, answer ClientRetry) {
	if h.onRetry != nil {
		h.onRetry(ctx, answer)
	}
}
