package proxy

import (
	"log/slog"
	"strconv"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
)

// fallbackLayer returns the fallback layer of cfg's targets (R20.10), or
// nil without targets. A target's upstream is checked like Upstream.
func fallbackLayer(cfg *Config, codec layer.Codec) (layer.Layer, error) {
	if len(cfg.Fallback) == 0 {
		return nil, nil
	}
	targets := make([]fallback.Target, len(cfg.Fallback))
	for i, t := range cfg.Fallback {
		if t.Upstream != "" {
			u, err := parseUpstream(t.Upstream, codec)
			if err != nil {
				ce, _ := err.(*ConfigError)
				return nil, &ConfigError{Field: "Fallback[" + strconv.Itoa(i) + "].Upstream", Problem: ce.Problem}
			}
			t.Upstream = u.String()
		}
		targets[i] = t
	}
	l, err := fallback.New(fallback.Config{Codec: codec, Targets: targets, OnEvent: cfg.Policy.OnEvent,
		Rules: fallback.Rules{Statuses: cfg.FallbackStatuses, Admit: cfg.Policy.Admit}})
	if err != nil {
		return nil, &ConfigError{Field: "Fallback", Problem: "is invalid: " + err.Error()}
	}
	return l, nil
}

// fallbackAttrs appends the safe attributes of a fallback step to a log
// line's.
func fallbackAttrs(attrs []slog.Attr, f *layer.Fallback) []slog.Attr {
	if f == nil {
		return attrs
	}
	if f.From != "" {
		attrs = append(attrs, slog.String("fallback_from", f.From), slog.String("fallback_outcome", string(f.Outcome)),
			slog.Int("fallback_attempts", f.Attempts))
	}
	attrs = append(attrs, slog.String("fallback_to", f.To), slog.Int("fallback_index", f.Index))
	if f.Skipped {
		attrs = append(attrs, slog.Bool("fallback_skipped", true))
	}
	return attrs
}
