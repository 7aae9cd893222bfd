package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/omlx"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/layers/stall"
)

// The providers the chat can talk to.
const (
	providerScripted = "scripted"
	providerOpenAI   = "openai"
	providerOllama   = "ollama"
	providerOMLX     = "omlx"
)

// maxAttempts is the wire attempts of one completion, the first included.
const maxAttempts = 4

// continuations is the continuation budget of one answer (R17.3).
const continuations = 3

// systemPrompt starts every conversation.
const systemPrompt = "You are a helpful assistant in a terminal chat. Answer briefly. " +
	"When the user wants a die rolled, call the dice tool."

// config is what the flags and the environment decided.
type config struct {
	// provider is one of the provider constants.
	provider string
	// faults makes the scripted provider inject one fault per turn.
	faults bool
	// dialect is the scripted provider's wire dialect (openai or ollama).
	dialect string
	// baseURL is the provider's root URL, without the endpoint path.
	baseURL string
	// apiKey is sent as a bearer token when not empty.
	apiKey string
	// model is the model every request names.
	model string
	// baseDelay is the backoff base of the retry policy.
	baseDelay time.Duration
	// jitter is the policy's jitter; nil means uniform random.
	jitter func() float64
	// gap is the pause between the scripted provider's streamed chunks.
	gap time.Duration
	// roll rolls a die with the given number of sides (the dice tool).
	roll func(sides int) int
	// stall are the per-attempt stall limits of the chain (package
	// layers/stall); the zero value has none.
	stall stall.Limits
}

// Stall limits of the chat. A real provider gets the setting the README
// recommends for reasoning models: headers within 5 minutes (a local
// server may load the model first), the first reasoning or content within
// 10 minutes, and no silence longer than 5 minutes. The scripted provider
// answers at once, so its limits are short enough to watch one fire.
var (
	realStall     = stall.Limits{Header: 5 * time.Minute, FirstOutput: 10 * time.Minute, Idle: 5 * time.Minute}
	scriptedStall = stall.Limits{Header: 30 * time.Second, FirstOutput: 2 * time.Minute, Idle: 1500 * time.Millisecond}
)

// backend is a connected chat: a session over a broker and what to release.
type backend struct {
	session *broker.Session
	// title describes the provider for the header line.
	title string
	// scripted is the in-process provider, nil for a real one.
	scripted *scripted
	close    func()
}

// openBackend builds the chain, the broker and the session for cfg. notify
// receives the broker's notices and admit decides resends (R8).
func openBackend(cfg config, notify func(broker.Notice), admit layer.AdmissionHook) (*backend, error) {
	be := &backend{close: func() {}}
	var cdc codec.Codec
	base := cfg.baseURL
	switch cfg.provider {
	case providerScripted:
		srv, err := startScripted(cfg.dialect, cfg.faults, cfg.gap)
		if err != nil {
			return nil, err
		}
		be.scripted, base = srv, srv.URL
		cdc = openai.New()
		if cfg.dialect == dialectOllama {
			cdc = ollama.New()
		}
		faults := "faults off"
		if cfg.faults {
			faults = "faults on"
		}
		be.title = fmt.Sprintf("scripted provider (%s dialect, %s)", cfg.dialect, faults)
	case providerOpenAI:
		cdc = openai.New()
		be.title = "OpenAI at " + base
	case providerOllama:
		cdc = ollama.New()
		be.title = "Ollama at " + base
	case providerOMLX:
		cdc = omlx.New()
		be.title = "oMLX at " + base
	default:
		return nil, errors.New("unknown provider " + strconv.Quote(cfg.provider))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	release := func() {
		tr.CloseIdleConnections()
		if be.scripted != nil {
			be.scripted.Close()
		}
	}
	limits, err := stall.New(cfg.stall)
	if err != nil {
		release()
		return nil, err
	}
	ch, err := chain.Default(cdc, chain.WithTransport(tr), chain.WithPerAttempt(limits))
	if err != nil {
		release()
		return nil, err
	}
	var copts []client.Option
	if cfg.apiKey != "" {
		copts = append(copts, client.WithAPIKey(cfg.apiKey))
	}
	cl, err := client.New(base, ch, copts...)
	if err != nil {
		release()
		return nil, err
	}
	be.close = func() {
		ch.CloseIdleConnections()
		release()
	}
	b := broker.New(cl,
		broker.WithModel(cfg.model),
		broker.WithTools(diceTool(cfg.roll)),
		broker.WithPolicy(retry.Policy{
			MaxAttempts: maxAttempts,
			BaseDelay:   new(cfg.baseDelay),
			Jitter:      cfg.jitter,
			Admit:       admit,
		}),
		broker.WithContinuation(broker.Continuation{Max: continuations}),
		broker.WithNotices(notify),
	)
	be.title += " · model " + cfg.model
	be.session = broker.NewSession(b, systemPrompt)
	return be, nil
}

// diceTool is the chat's one built-in tool: it rolls a die.
func diceTool(roll func(sides int) int) broker.Tool {
	if roll == nil {
		roll = func(sides int) int { return rand.IntN(sides) + 1 }
	}
	return broker.Tool{
		Spec: chat.ToolSpec{
			Name:        "dice",
			Description: "Roll a fair die and return the number rolled.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"sides":` +
				`{"type":"integer","description":"number of sides, 2 to 1000 (default 6)"}}}`),
		},
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct {
				Sides *int `json:"sides"`
			}
			if len(args) > 0 {
				if err := json.Unmarshal(args, &a); err != nil {
					return "", errors.New("the arguments are not a JSON object with an integer sides")
				}
			}
			sides := 6
			if a.Sides != nil {
				sides = *a.Sides
			}
			if sides < 2 || sides > 1000 {
				return "", errors.New("sides must be between 2 and 1000")
			}
			return strconv.Itoa(roll(sides)), nil
		},
	}
}

// ollamaBase turns an OLLAMA_HOST value ("127.0.0.1", "localhost:11434",
// "http://host:11434") into a base URL with a scheme and a port.
func ollamaBase(host string) (string, error) {
	host = strings.TrimRight(strings.TrimSpace(host), "/")
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("OLLAMA_HOST %q is not a host or URL", host)
	}
	if u.Port() == "" {
		port := "11434"
		if u.Scheme == "https" {
			port = "443"
		}
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// openAIBase turns an OPENAI_BASE_URL value (the API root, usually ending in
// /v1) into the root the native client wants: the codec adds
// /v1/chat/completions itself.
func openAIBase(v string) string {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	if v == "" {
		return "https://api.openai.com"
	}
	return strings.TrimSuffix(v, "/v1")
}
