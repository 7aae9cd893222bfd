package recoursetest

// Values of the canned Messages API bodies.
const (
	// AnthropicPath is the path of Claude's Messages API endpoint.
	AnthropicPath = "/v1/messages"
	// AnthropicModel is the model the canned Messages API bodies name.
	AnthropicModel = "claude-sonnet-4-5"
	// AnthropicMessageID is the message id of the canned bodies.
	AnthropicMessageID = "msg_01XFDUDYJgAACzvnptvVoYEL"
)

// anthropicEvent is one whole Messages API event, "event: typ\ndata: data\n\n".
func anthropicEvent(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

// AnthropicStart returns the events that open a Messages API stream and
// carry no output: message_start (usage 12 input tokens) and a ping.
func AnthropicStart() []string {
	return []string{
		anthropicEvent("message_start", `{"type":"message_start","message":{"id":"`+AnthropicMessageID+`","type":"message","role":"assistant","model":"`+AnthropicModel+`","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`),
		anthropicEvent("ping", `{"type":"ping"}`),
	}
}

// AnthropicEvents returns the Server-Sent Events of a whole streamed
// Messages API answer of model AnthropicModel: AnthropicStart's two
// events, a text content_block_start (event 2), one text_delta per
// element of content (events 3, 4, …), content_block_stop, a message_delta
// with stop_reason end_turn and 7 output tokens, and message_stop. Pass
// the result to SSE; Step.CutEvents(n) cuts it after its first n events.
func AnthropicEvents(content ...string) []string {
	evs := AnthropicStart()
	evs = append(evs, anthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	for _, c := range content {
		evs = append(evs, anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+marshal(c)+`}}`))
	}
	return append(evs,
		anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`),
		anthropicEvent("message_stop", `{"type":"message_stop"}`))
}

// AnthropicErrorEvent returns an in-band Messages API error event of
// error type typ (overloaded_error, api_error, …) and message, as the API
// sends it after a 200.
func AnthropicErrorEvent(typ, message string) string {
	return anthropicEvent("error", `{"type":"error","error":{"type":`+marshal(typ)+`,"message":`+marshal(message)+`}}`)
}

// AnthropicServerToolUse returns the content_block_start of a server
// tool's use (a web search the provider runs and bills) at index i.
func AnthropicServerToolUse(i int) string {
	return anthropicEvent("content_block_start", `{"type":"content_block_start","index":`+marshal(i)+`,"content_block":{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{}}}`)
}

// AnthropicMessage returns a complete (unary) Messages API message of
// model AnthropicModel whose one text block holds content, stop_reason
// end_turn, usage 12 input + 7 output tokens.
func AnthropicMessage(content string) string {
	return `{"id":"` + AnthropicMessageID + `","type":"message","role":"assistant","model":"` + AnthropicModel +
		`","content":[{"type":"text","text":` + marshal(content) + `}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":7}}`
}

// AnthropicError returns a Messages API error body of error type typ and
// message, with the request_id the API adds.
func AnthropicError(typ, message string) string {
	return `{"type":"error","error":{"type":` + marshal(typ) + `,"message":` + marshal(message) + `},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
}

// AnthropicOverloaded returns the step of Anthropic's overload answer: a
// 529 with an overloaded_error body and a request-id header.
func AnthropicOverloaded() Step {
	return JSON(529, AnthropicError("overloaded_error", "Overloaded"), "request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
}

// AnthropicStream returns the SSE step of events, each written and flushed
// as its own chunk, with Anthropic's request-id header.
func AnthropicStream(events ...string) Step {
	return SSE(events...).WithHeader("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
}
