package proxy

import (
	"slices"
	"strconv"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
)

// fallbackLayer returns the fallback layer of cfg's targets (R20.10), or
// nil without targets. A target's upstream is checked like Upstream.
func fallbackLayer(cfg *Config, cdc codec.Codec) (layer.Layer, error) {
	if len(cfg.Fallback) == 0 {
		return nil, nil
	}
	targets := make([]fallback.Target, len(cfg.Fallback))
	for i, t := range cfg.Fallback {
		if t.Upstream != "" {
			u, err := parseUpstream(t.Upstream, cdc)
			if err != nil {
				ce, _ := err.(*ConfigError)
				return nil, &ConfigError{Field: "Fallback[" + strconv.Itoa(i) + "].Upstream", Problem: ce.Problem}
			}
			t.Upstream = u.String()
		}
		targets[i] = t
	}
	rules := cfg.FallbackRules
	rules.Statuses = append(slices.Clone(cfg.FallbackStatuses), rules.Statuses...)
	rules.Admit = cfg.Policy.Admit
	l, err := fallback.New(fallback.Config{Codec: cdc, Targets: targets, OnEvent: cfg.Policy.OnEvent, Rules: rules})
	if err != nil {
		return nil, &ConfigError{Field: "Fallback", Problem: "is invalid: " + err.Error()}
	}
	return l, nil
}
