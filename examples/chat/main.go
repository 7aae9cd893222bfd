// Command chat is a terminal chat (bubbletea) over recourse's broker that
// makes every retry visible without putting it into the conversation.
//
// The screen has a transcript of user and assistant messages, one
// transient status line and an input line. The status line is a
// broker.Status fed with the broker's notices (R17.2): before every backoff
// sleep it shows, for example,
//
//	retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)
//
// and counts the wait down; when a stream breaks after it started it shows
//
//	LLM stream interrupted; continuing generation (1/3): transport error
//
// The next sign of activity (a new completion starting, content, reasoning
// or a tool call arriving, a tool result, the turn ending, idle) clears
// it. Notices never enter the transcript, the history or the model
// context. Every completion may be sent up to 4 times, and a broken stream
// is continued up to 3 times (broker.WithContinuation).
//
// A failed Ollama or oMLX request is ambiguous (the model may have run), so
// recourse never resends one on its own; this chat asks instead, on the
// status line: "… the server may have run this request; send again? y/N".
// y sends it again; n, Esc or Enter refuses.
//
// Keys: Enter sends, Esc cancels a running turn (or answers no), Ctrl+U
// clears the input, Ctrl+C quits.
//
// # Providers
//
// Without configuration the chat talks to a scripted provider started in
// the process on 127.0.0.1, so it runs offline. The first of these that
// applies picks the provider:
//
//   - -faults: the scripted provider, injecting one fault per turn, in
//     this order and then again: two HTTP 504s before the answer; a stream
//     that sends only a keep-alive and is cut (resent at once, a brief
//     status); a stream cut in the middle of the answer (continued); a
//     dice tool call whose next completion gets two HTTP 503s.
//   - -provider NAME: scripted, openai, ollama or omlx.
//   - OLLAMA_HOST set: Ollama at that host (for example 127.0.0.1:11434 or
//     http://127.0.0.1:11434); OLLAMA_MODEL picks the model (llama3.2).
//   - OPENAI_API_KEY set: OpenAI, or any compatible server at
//     OPENAI_BASE_URL (the API root, default https://api.openai.com/v1);
//     OPENAI_MODEL picks the model (gpt-4o-mini).
//   - otherwise the scripted provider without faults.
//
// -provider omlx talks to oMLX at OMLX_BASE_URL (required, for example
// http://127.0.0.1:8000/v1) with the model OMLX_MODEL (required) and the
// key OMLX_API_KEY (optional).
//
// # Flags
//
//	-faults           inject faults (scripted provider)
//	-provider NAME    auto (default), scripted, openai, ollama or omlx
//	-dialect NAME     wire dialect of the scripted provider: openai (default)
//	                  or ollama (its faults are ambiguous, so the chat asks
//	                  y/N before every resend)
//
// Run it from the repository root:
//
//	go -C examples run ./chat -faults
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

// parseConfig reads the flags in args and the environment through getenv.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	faults := fs.Bool("faults", false, "inject faults across turns (scripted provider)")
	provider := fs.String("provider", "auto", "auto, scripted, openai, ollama or omlx")
	dialect := fs.String("dialect", dialectOpenAI, "wire dialect of the scripted provider: openai or ollama")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg := config{provider: *provider, faults: *faults, dialect: *dialect}
	if cfg.faults {
		if cfg.provider != "auto" && cfg.provider != providerScripted {
			return config{}, errors.New("-faults needs the scripted provider")
		}
		cfg.provider = providerScripted
	}
	if cfg.provider == "auto" {
		switch {
		case getenv("OLLAMA_HOST") != "":
			cfg.provider = providerOllama
		case getenv("OPENAI_API_KEY") != "":
			cfg.provider = providerOpenAI
		default:
			cfg.provider = providerScripted
		}
	}
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	switch cfg.provider {
	case providerScripted:
		if cfg.dialect != dialectOpenAI && cfg.dialect != dialectOllama {
			return config{}, fmt.Errorf("-dialect %q: want openai or ollama", cfg.dialect)
		}
		cfg.model = scriptedModel
		// A fixed jitter makes the demo's waits 1.2s, 2.4s, 4.8s.
		cfg.baseDelay, cfg.jitter, cfg.gap = 2400*time.Millisecond, func() float64 { return 0.5 }, 40*time.Millisecond
		cfg.stall = scriptedStall
		return cfg, nil
	case providerOllama:
		base, err := ollamaBase(or(getenv("OLLAMA_HOST"), "127.0.0.1:11434"))
		if err != nil {
			return config{}, err
		}
		cfg.baseURL, cfg.model = base, or(getenv("OLLAMA_MODEL"), "llama3.2")
	case providerOpenAI:
		if getenv("OPENAI_API_KEY") == "" && getenv("OPENAI_BASE_URL") == "" {
			return config{}, errors.New("-provider openai needs OPENAI_API_KEY (or OPENAI_BASE_URL of a compatible server)")
		}
		cfg.baseURL, cfg.apiKey = openAIBase(getenv("OPENAI_BASE_URL")), getenv("OPENAI_API_KEY")
		cfg.model = or(getenv("OPENAI_MODEL"), "gpt-4o-mini")
	case providerOMLX:
		if getenv("OMLX_BASE_URL") == "" || getenv("OMLX_MODEL") == "" {
			return config{}, errors.New("-provider omlx needs OMLX_BASE_URL and OMLX_MODEL")
		}
		cfg.baseURL, cfg.apiKey, cfg.model = openAIBase(getenv("OMLX_BASE_URL")), getenv("OMLX_API_KEY"), getenv("OMLX_MODEL")
	default:
		return config{}, fmt.Errorf("-provider %q: want auto, scripted, openai, ollama or omlx", cfg.provider)
	}
	cfg.baseDelay = time.Second
	cfg.stall = realStall
	return cfg, nil
}

// chatApp is a model connected to its backend.
type chatApp struct {
	model   *Model
	backend *backend
}

// newApp connects a new model to the backend cfg describes.
func newApp(ctx context.Context, cfg config) (*chatApp, error) {
	m := NewModel(ctx)
	be, err := openBackend(cfg, m.notify, m.admit)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.attach(be.session, be.title)
	return &chatApp{model: m, backend: be}, nil
}

// close ends a running turn, then releases the backend.
func (a *chatApp) close() {
	a.model.Close()
	a.backend.close()
}

// run runs the chat on the terminal until the user quits.
func run(ctx context.Context, cfg config, opts ...tea.ProgramOption) error {
	a, err := newApp(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.close()
	_, err = tea.NewProgram(a.model, opts...).Run()
	return err
}
