package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// exampleClient returns a native client for a scripted loopback provider
// playing steps, and a function that releases both.
func exampleClient(steps ...recoursetest.Step) (*client.Client, func()) {
	srv := recoursetest.NewServer(steps...)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	ch, err := chain.Default(openai.New(), chain.WithTransport(tr))
	if err != nil {
		panic(err)
	}
	cl, err := client.New(srv.URL, ch, client.WithAPIKey("sk-example"))
	if err != nil {
		panic(err)
	}
	return cl, func() { srv.Close(); tr.CloseIdleConnections() }
}

func ExampleNew() {
	cl, done := exampleClient(
		recoursetest.JSON(200, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`),
		recoursetest.JSON(200, recoursetest.OpenAIChat("It is sunny in Paris.")),
	)
	defer done()

	weather := broker.Tool{
		Spec: chat.ToolSpec{Name: "weather", Description: "Current weather of a city.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ City string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return "sunny, 24°C in " + a.City, nil
		},
	}
	b := broker.New(cl,
		broker.WithModel("gpt-4o-mini"),
		broker.WithTools(weather),
		broker.WithPolicy(retry.Policy{MaxAttempts: 3}), // each completion may be sent up to 3 times
	)
	history := []chat.Message{{Role: chat.User, Content: "What is the weather in Paris?"}}
	if _, err := b.Generate(context.Background(), &history); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range history {
		switch {
		case len(m.ToolCalls) > 0:
			fmt.Printf("%s: calls %s %s\n", m.Role, m.ToolCalls[0].Name, m.ToolCalls[0].Arguments)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Content)
		}
	}
	// Output:
	// user: What is the weather in Paris?
	// assistant: calls weather {"city":"Paris"}
	// tool: sunny, 24°C in Paris
	// assistant: It is sunny in Paris.
}

func ExampleNewSession() {
	cl, done := exampleClient(
		recoursetest.JSON(504, `{"error":{"message":"upstream timed out","type":"server_error","code":"server_error"}}`),
		recoursetest.SSE(recoursetest.OpenAIStream("Hello", ", world.")...),
	)
	defer done()

	b := broker.New(cl,
		broker.WithModel("gpt-4o-mini"),
		broker.WithPolicy(retry.Policy{
			MaxAttempts: 4,
			BaseDelay:   new(2400 * time.Millisecond),
			Jitter:      func() float64 { return 0.5 },
			Admit: func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
				return layer.Allow, nil
			},
			// This example skips the wait; by default the backoff really sleeps.
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		}),
		broker.WithContinuation(broker.Continuation{Max: 2}),
		// A terminal UI would Apply every notice to a broker.Status and
		// redraw its status line; here the retry notice is printed.
		broker.WithNotices(func(n broker.Notice) {
			if n.Retry != nil {
				fmt.Println("status:", broker.FormatRetry(*n.Retry))
			}
		}),
	)
	s := broker.NewSession(b, "You are terse.")
	for chunk, err := range s.SendStream(context.Background(), "Say hello.") {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("chunk: %q\n", chunk)
	}
	for _, m := range s.Messages() {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// status: retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)
	// chunk: "Hello"
	// chunk: ", world."
	// system: You are terse.
	// user: Say hello.
	// assistant: Hello, world.
}

// GenerateStreamEvents is the single-turn event stream: content events,
// then done, and the answer appended to the history.
func ExampleBroker_GenerateStreamEvents() {
	cl, done := exampleClient(recoursetest.SSE(recoursetest.OpenAIStream("Hello, ", "world.")...))
	defer done()
	b := broker.New(cl, broker.WithModel("gpt-4o-mini"), broker.WithPolicy(retry.Recommended()))
	history := []chat.Message{{Role: chat.User, Content: "Say hello."}}
	for ev := range b.GenerateStreamEvents(context.Background(), &history) {
		switch ev.Type {
		case client.EventContent:
			fmt.Printf("content %q\n", ev.Text)
		case client.EventDone:
			fmt.Println("done", ev.Completion.FinishReason)
		case client.EventError:
			fmt.Println("error", ev.Err.Reason)
		}
	}
	fmt.Println(len(history), history[1].Content)
	// Output:
	// content "Hello, "
	// content "world."
	// done stop
	// 2 Hello, world.
}
