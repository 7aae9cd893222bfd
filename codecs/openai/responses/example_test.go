package responses_test

import (
	"fmt"
	"net/http"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

func ExampleNew() {
	codec := responses.New()
	maxTokens := 256
	body, err := codec.Encode(&chat.Request{
		Model: "o4-mini",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Answer in one word."},
			{Role: chat.User, Content: "Capital of Japan?"},
		},
		// A reasoning model takes reasoning.effort (R19.2).
		Options: chat.Options{MaxTokens: &maxTokens, ReasoningEffort: "low"},
		Stream:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(codec.Path())
	fmt.Println(string(body))
	// Output:
	// /v1/responses
	// {"model":"o4-mini","input":[{"type":"message","role":"system","content":"Answer in one word."},{"type":"message","role":"user","content":"Capital of Japan?"}],"reasoning":{"effort":"low"},"max_output_tokens":256,"stream":true}
}

func ExampleNewStreamDecoder() {
	d := responses.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
	d.Write([]byte("event: response.created\n" +
		`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","model":"gpt-4.1"}}` + "\n\n" +
		"event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","sequence_number":1,"output_index":0,"content_index":0,"delta":"Hi"}` + "\n\n"))
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		fmt.Printf("frame %d content %q evidence %v\n", f.Index, f.Content, f.Semantic().Any())
	}
	seq, _ := d.DeliveredSequence()
	fmt.Println(d.ResponseID(), seq)
	fmt.Println(d.End()) // no response.completed yet: fails closed
	// Output:
	// frame 1 content "" evidence false
	// frame 2 content "Hi" evidence true
	// resp_1 1
	// recourse: responses stream ended before its terminal event
}

func ExampleBackground() {
	codec := responses.New(responses.Background())
	body, err := codec.Encode(&chat.Request{
		Model:    "gpt-4.1-mini",
		Messages: []chat.Message{{Role: chat.User, Content: "Write a long story."}},
		Stream:   true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(body))
	fmt.Println(codec.Background(body))
	// Output:
	// {"model":"gpt-4.1-mini","input":[{"type":"message","role":"user","content":"Write a long story."}],"stream":true,"background":true,"store":true}
	// true
}

func ExampleKeepRunning() {
	create, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/responses", nil)
	fmt.Println(responses.New(responses.Background()).CancelRequest(create, "resp_1").URL)
	fmt.Println(responses.New(responses.Background(), responses.KeepRunning()).CancelRequest(create, "resp_1") == nil)
	// Output:
	// https://api.openai.com/v1/responses/resp_1/cancel
	// true
}

func ExampleCodec_ResumeRequest() {
	create, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/responses", nil)
	read := responses.New().ResumeRequest(create, codec.ResumePoint{ResponseID: "resp_1", Cursor: 57})
	fmt.Println(read.Method, read.URL)
	// Output:
	// GET https://api.openai.com/v1/responses/resp_1?starting_after=57&stream=true
}
