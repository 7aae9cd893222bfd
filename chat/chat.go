// Package chat is the provider-neutral model of a chat completion: the
// request a caller builds, the messages of a conversation, tool descriptors
// and calls, and the completion a provider returns.
//
// Codecs (codecs/openai, codecs/ollama, codecs/omlx) translate these values
// to and from each provider's wire format. The types are plain data: they are
// safe to copy, hold no resources and are not safe for concurrent mutation.
package chat

import "encoding/json"

// Role is the author of a message.
type Role string

// The roles of a conversation.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
)

// Message is one entry of a conversation history.
type Message struct {
	// Role is the author of the message: System, User, Assistant or Tool.
	// The OpenAI codec refuses any other value (an empty Role included); the
	// Ollama and oMLX codecs send it as given.
	Role Role `json:"role"`
	// Content is the text of the message.
	Content string `json:"content,omitempty"`
	// Reasoning is the model's reasoning text of an assistant message, when the
	// provider returned one. The Ollama codec sends it back as the message's
	// thinking; the OpenAI and oMLX codecs do not send it, and leave out an
	// assistant message that holds nothing else.
	Reasoning string `json:"reasoning,omitempty"`
	// ReasoningSignature is the provider's signature of Reasoning, when it
	// sent one (Anthropic's thinking block). The Anthropic codec sends the
	// reasoning back as a thinking block only with its signature; the other
	// codecs ignore it.
	ReasoningSignature string `json:"reasoning_signature,omitempty"`
	// Images are raw image bytes attached to a user message; codecs encode them
	// (base64, data URLs) as their provider requires.
	Images []Image `json:"images,omitempty"`
	// ToolCalls are the completed tool calls of an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the name of the tool that produced a tool message.
	ToolName string `json:"tool_name,omitempty"`
}

// Image is an image attached to a message.
type Image struct {
	// MIMEType is the media type, for example "image/png". Empty means "image/png".
	MIMEType string `json:"mime_type,omitempty"`
	// Data holds the raw (not base64-encoded) image bytes.
	Data []byte `json:"data"`
}

// ToolCall is one completed call of a tool requested by the model.
type ToolCall struct {
	// ID is the provider's call identifier; Ollama may leave it empty.
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the call's argument object as JSON text.
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	// Name is the name the model calls the tool by, and the ToolCall.Name of
	// its calls. It is required: codecs refuse a tool with an empty Name.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to call it;
	// empty sends no description.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the argument object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Schema asks for a structured (JSON) completion that follows a JSON schema.
type Schema struct {
	// Name names the schema (OpenAI requires one); empty means "response".
	Name string `json:"name,omitempty"`
	// Schema is the JSON schema document.
	Schema json.RawMessage `json:"schema"`
	// Strict asks providers that support it to enforce the schema exactly.
	Strict bool `json:"strict,omitempty"`
}

// Options are the sampling and generation controls of a request. A nil
// pointer means "not set": the codec sends nothing and the provider default
// applies. A codec whose provider does not support a set control returns an
// error from Encode instead of dropping it silently.
type Options struct {
	// Temperature is the sampling temperature; nil leaves the provider
	// default. It must be finite. The OpenAI codec refuses it for reasoning
	// models.
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP is the nucleus sampling probability mass; nil leaves the provider
	// default. It must be finite. The OpenAI codec refuses it for reasoning
	// models.
	TopP *float64 `json:"top_p,omitempty"`
	// TopK limits sampling to the K most likely tokens; nil leaves the
	// provider default. The OpenAI codec refuses it (OpenAI has no top_k).
	TopK *int `json:"top_k,omitempty"`
	// MaxTokens caps the number of generated tokens; nil leaves the provider
	// default. Codecs send it as max_tokens (max_completion_tokens for
	// OpenAI reasoning models) or as Ollama's num_predict.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// Seed asks for reproducible sampling with this seed; nil sends none.
	// The oMLX codec refuses it.
	Seed *int `json:"seed,omitempty"`
	// Stop lists sequences at which the provider stops generating; nil or
	// empty sends none.
	Stop []string `json:"stop,omitempty"`
	// ContextLength is Ollama's num_ctx.
	ContextLength *int `json:"num_ctx,omitempty"`
	// ReasoningEffort is "low", "medium" or "high" for providers with reasoning models.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Think turns Ollama's thinking mode on or off.
	Think *bool `json:"think,omitempty"`
	// KeepAlive is Ollama's keep_alive duration string, for example "5m".
	KeepAlive string `json:"keep_alive,omitempty"`
	// JSONMode asks for a JSON object without a schema (Ollama format "json",
	// OpenAI response_format json_object).
	JSONMode bool `json:"json_mode,omitempty"`
}

// Request is one logical chat completion request.
type Request struct {
	// Model is the provider's model name, for example "gpt-4o-mini" or
	// "llama3.2". It is required: codecs refuse an empty Model.
	Model string `json:"model"`
	// Messages is the conversation so far, oldest first.
	Messages []Message `json:"messages"`
	// Tools are the tools the model may call; nil or empty offers none.
	// Event streams (client.Client.StreamEvents) refuse a request with tools.
	Tools []ToolSpec `json:"tools,omitempty"`
	// Schema, when set, makes the request a structured completion.
	Schema *Schema `json:"schema,omitempty"`
	// Options are the sampling and generation controls; the zero value sets
	// none, so every provider default applies.
	Options Options `json:"options"`
	// Stream asks for a streamed response.
	Stream bool `json:"stream,omitempty"`
}

// Usage is the token accounting of a completion.
type Usage struct {
	// InputTokens is the number of prompt tokens the provider counted
	// (OpenAI prompt_tokens, Ollama prompt_eval_count).
	InputTokens int `json:"input_tokens"`
	// OutputTokens is the number of generated tokens the provider counted
	// (OpenAI completion_tokens, Ollama eval_count).
	OutputTokens int `json:"output_tokens"`
}

// Completion is a provider's answer to a request.
type Completion struct {
	// Message is the assistant message (content, reasoning, tool calls).
	Message Message `json:"message"`
	// FinishReason is the provider's finish or done reason ("stop", "length",
	// "tool_calls", ...).
	FinishReason string `json:"finish_reason,omitempty"`
	// Model is the model that answered, as the provider reported it.
	Model string `json:"model,omitempty"`
	// ID is the provider's completion identifier, when it sends one.
	ID string `json:"id,omitempty"`
	// Usage is nil when the provider reported no token counts.
	Usage *Usage `json:"usage,omitempty"`
}

// Clone returns a deep copy of m, so that later mutation of either value
// cannot reach the other.
func (m Message) Clone() Message {
	c := m
	if m.Images != nil {
		c.Images = make([]Image, len(m.Images))
		for i, im := range m.Images {
			c.Images[i] = Image{MIMEType: im.MIMEType, Data: append([]byte(nil), im.Data...)}
		}
	}
	if m.ToolCalls != nil {
		c.ToolCalls = make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			c.ToolCalls[i] = ToolCall{ID: tc.ID, Name: tc.Name, Arguments: append(json.RawMessage(nil), tc.Arguments...)}
		}
	}
	return c
}

// ToolCallFragment is one streamed piece of a tool call: the first fragment
// of a call carries its ID and name, later ones carry pieces of the
// argument text to concatenate. Fragments are never a completed call.
type ToolCallFragment struct {
	// Index identifies the call within the response.
	Index int `json:"index"`
	// ID is the provider's call identifier, usually set on the first
	// fragment of a call only; empty otherwise.
	ID string `json:"id,omitempty"`
	// Name is the tool's name, usually set on the first fragment of a call
	// only; empty otherwise.
	Name string `json:"name,omitempty"`
	// Arguments is a piece of the call's argument JSON text; the pieces of
	// all fragments with the same Index, concatenated in order, form the
	// arguments. It may be empty.
	Arguments string `json:"arguments,omitempty"`
}

// Chunk is one delivered piece of a streamed completion.
type Chunk struct {
	// Frame is the index of the provider frame that produced the chunk
	// among its attempt's valid frames, counting from 1 (R13.6).
	Frame int `json:"frame"`
	// Content is assistant text.
	Content string `json:"content,omitempty"`
	// Reasoning is reasoning text; delivered only when asked for.
	Reasoning string `json:"reasoning,omitempty"`
	// ReasoningSignature is the provider's signature of the reasoning
	// block this chunk closes (Anthropic's signed thinking block), or "";
	// delivered with reasoning only.
	ReasoningSignature string `json:"reasoning_signature,omitempty"`
	// ToolCallFragments are tool-call pieces; delivered only when asked for.
	ToolCallFragments []ToolCallFragment `json:"tool_call_fragments,omitempty"`
	// Done marks the accepted terminal chunk; Completion then holds the
	// completed calls, finish reason, model and usage.
	Done bool `json:"done,omitempty"`
	// Completion is the completed answer on the Done chunk, and nil on
	// every other chunk.
	Completion *Completion `json:"completion,omitempty"`
}
