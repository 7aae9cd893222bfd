package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/proxy"
)

// fallbackKeyEnv is the environment variable of the bearer key of the n-th
// fallback target (from 1) that names another upstream.
func fallbackKeyEnv(n int) string { return envPrefix + "FALLBACK_KEY_" + strconv.Itoa(n) }

// defineFallback registers the fallback flags (R20.10).
func defineFallback(fs *flag.FlagSet, s *settings) {
	fs.StringVar(&s.fallback, "fallback", "", "comma-separated fallback targets, tried in order when recovery on -upstream ends exhausted, quota_exhausted or delay_ceiling: a model name (same upstream, the client's key), an upstream root URL of the same wire, or URL#model; a target with another upstream never gets the client's key, only "+fallbackKeyEnv(1)+" (…_2 for the second target, …) as a bearer key when set (empty: no fallback)")
	fs.StringVar(&s.fallbackCodes, "fallback-codes", "", "with -fallback, comma-separated provider error codes (error.code of the error body) whose failure falls back whatever its HTTP status, for example context_length_exceeded; empty: none")
	fs.StringVar(&s.fallbackNeverCodes, "fallback-never-codes", "", "with -fallback, comma-separated provider error codes whose failure never falls back, whatever -fallback-statuses or -fallback-codes say, for example content_policy_violation: the client gets the provider's own error; empty: none")
	fs.StringVar(&s.fallbackOnStall, "fallback-on-stall", "", "with -fallback, comma-separated stall limits after which a target but the last is left at once for the next, unresent whatever attempts and quota remain: header_timeout (needs -header-timeout), first_output_timeout (-first-output-timeout; a stream whose 200 was sent is continued by the next target in the same body) or idle_timeout (-idle-timeout), before any output; N=limit instead sets the N-th -fallback target's own limits, which replace the others for leaving it (N=none: it is never left on a stall); empty: a stall is retried on its target first")
	fs.StringVar(&s.fallbackStatuses, "fallback-statuses", "", "with -fallback, comma-separated HTTP statuses of a failure recovery does not retry that fall back too, for example 404 (a model not found) or 400 (a context too long for the model); empty: none")
}

// fallbackOnly are the settings that only mean something with -fallback.
var fallbackOnly = []string{"fallback-statuses", "fallback-codes", "fallback-never-codes", "fallback-on-stall"}

// fallbackRules returns the rules of -fallback-codes, -fallback-never-codes
// and -fallback-on-stall, checked with the statuses of -fallback-statuses
// by the library's one validation (fallback.Rules.Validate). An item N=limit
// of -fallback-on-stall (N=none: no limit) sets the own Stalls of the N-th
// of targets instead (R20.16).
func (s *settings) fallbackRules(statuses []int, targets []fallback.Target) (fallback.Rules, error) {
	r := fallback.Rules{Codes: splitList(s.fallbackCodes), NeverCodes: splitList(s.fallbackNeverCodes)}
	for _, item := range splitList(s.fallbackOnStall) {
		var own *[]event.StallLimit
		name := item
		if n, l, ok := strings.Cut(item, "="); ok {
			i, err := strconv.Atoi(n)
			if err != nil || i < 1 || i > len(targets) {
				return r, fmt.Errorf("-fallback-on-stall: in %q, %q is not the number of a -fallback target (1 to %d)", item, n, len(targets))
			}
			own, name = &targets[i-1].Stalls, l
			if *own == nil {
				*own = []event.StallLimit{}
			}
			if name == "none" {
				continue
			}
		}
		l := event.StallLimit(name)
		var limit time.Duration
		switch l {
		case event.StallHeader:
			limit = s.headerTimeout
		case event.StallFirstOutput:
			limit = s.firstOutputTimeout
		case event.StallIdle:
			limit = s.idleTimeout
		default:
			return r, fmt.Errorf("-fallback-on-stall: %q is not header_timeout, first_output_timeout or idle_timeout", name)
		}
		if limit == 0 {
			return r, fmt.Errorf("-fallback-on-stall names %s but its limit is off; set -%s", name, strings.ReplaceAll(name, "_", "-"))
		}
		if own != nil {
			*own = append(*own, l)
		} else {
			r.Stalls = append(r.Stalls, l)
		}
	}
	if err := (fallback.Rules{Statuses: statuses, Codes: r.Codes, NeverCodes: r.NeverCodes}).Validate(); err != nil {
		var ce *fallback.ConfigError
		if errors.As(err, &ce) {
			switch ce.Field {
			case "Rules.Codes":
				return r, fmt.Errorf("-fallback-codes: %v", err)
			case "Rules.NeverCodes":
				return r, fmt.Errorf("-fallback-never-codes: %v", err)
			}
		}
		return r, fmt.Errorf("-fallback-statuses: %v", err)
	}
	return r, nil
}

// fallbackTargets returns the targets and statuses of -fallback and
// -fallback-statuses.
func (s *settings) fallbackTargets() ([]fallback.Target, []int, error) {
	if s.fallback == "" {
		for _, name := range fallbackOnly {
			if s.set[name] {
				return nil, nil, fmt.Errorf("-%s is set but -fallback is empty; drop it, or name the targets", name)
			}
		}
		return nil, nil, nil
	}
	var statuses []int
	if s.fallbackStatuses != "" {
		var err error
		if statuses, err = parseStatuses(s.fallbackStatuses); err != nil {
			return nil, nil, fmt.Errorf("-fallback-statuses: %v", err)
		}
	}
	var targets []fallback.Target
	for i, item := range splitList(s.fallback) {
		n := i + 1
		t := fallback.Target{}
		if strings.Contains(item, "://") {
			raw, model, _ := strings.Cut(item, "#")
			u, err := url.Parse(raw)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, fmt.Errorf("-fallback: target %d is not a model name, an http or https URL, or URL#model", n)
			}
			t.Upstream, t.Model = raw, model
			if s.getenv != nil {
				if key := s.getenv(fallbackKeyEnv(n)); key != "" {
					// The key goes in the wire's own header (R21.12).
					name, prefix, err := proxy.KeyHeader(s.provider)
					if err != nil {
						return nil, nil, err
					}
					t.Credential = func(_ context.Context, h http.Header) error {
						h.Set(name, prefix+key)
						return nil
					}
				}
			}
		} else {
			t.Model = item
		}
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return nil, nil, fmt.Errorf("-fallback names no target")
	}
	return targets, statuses, nil
}
