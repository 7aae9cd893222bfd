package openaiwire

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
)

// encode returns the JSON of the Body that d makes of req, or the error
// text.
func encode(t *testing.T, d Dialect, req *chat.Request) string {
	t.Helper()
	b, err := d.Encode(req)
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := Marshal(b)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(out)
}

// TestDialectFields checks what each Dialect field changes, against the
// lenient zero value.
func TestDialectFields(t *testing.T) {
	t.Parallel()
	call := func(id, args string) *chat.Request {
		return &chat.Request{Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{ID: id, Name: "f", Arguments: json.RawMessage(args)},
		}}}}
	}
	image := func(im chat.Image) *chat.Request {
		return &chat.Request{Messages: []chat.Message{{Role: chat.User, Images: []chat.Image{im}}}}
	}
	schema := func(raw string, jsonMode bool) *chat.Request {
		return &chat.Request{Schema: &chat.Schema{Schema: json.RawMessage(raw)}, Options: chat.Options{JSONMode: jsonMode}}
	}
	tests := []struct {
		name       string
		d          Dialect
		req        *chat.Request
		lax, wants string // encoded by the zero Dialect and by d
	}{{
		name:  "KnownRoles",
		d:     Dialect{KnownRoles: true},
		req:   &chat.Request{Messages: []chat.Message{{Role: "developer", Content: "x"}}},
		lax:   `{"Messages":[{"role":"developer","content":"x"}],"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: unknown role",
	}, {
		name: "AssistantToolCalls",
		d:    Dialect{AssistantToolCalls: true},
		req:  &chat.Request{Messages: []chat.Message{{Role: chat.User, ToolCalls: []chat.ToolCall{{Name: "f"}}}}},
		lax: `{"Messages":[{"role":"user","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: tool calls are only sent on assistant messages",
	}, {
		name: "ToolCallIDs: a tool call needs an ID",
		d:    Dialect{ToolCallIDs: true},
		req:  call("", `{}`),
		lax: `{"Messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: tool call 0: no ID",
	}, {
		name:  "ToolCallIDs: a tool message needs a tool call ID",
		d:     Dialect{ToolCallIDs: true},
		req:   &chat.Request{Messages: []chat.Message{{Role: chat.Tool, Content: "ok"}}},
		lax:   `{"Messages":[{"role":"tool","content":"ok"}],"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: tool message has no tool call ID",
	}, {
		name:  "ToolCallIDs: tool_call_id only on tool messages",
		d:     Dialect{ToolCallIDs: true},
		req:   &chat.Request{Messages: []chat.Message{{Role: chat.User, Content: "x", ToolCallID: "c"}}},
		lax:   `{"Messages":[{"role":"user","tool_call_id":"c","content":"x"}],"Tools":null,"ResponseFormat":null}`,
		wants: `{"Messages":[{"role":"user","content":"x"}],"Tools":null,"ResponseFormat":null}`,
	}, {
		name: "CheckImages: empty image",
		d:    Dialect{CheckImages: true},
		req:  image(chat.Image{}),
		lax: `{"Messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: image 0: empty",
	}, {
		name: "CheckImages: MIME type",
		d:    Dialect{CheckImages: true},
		req:  image(chat.Image{MIMEType: "image/png;x", Data: []byte{1}}),
		lax: `{"Messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;x;base64,AQ=="}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: image 0: MIME type is not of the form type/subtype",
	}, {
		name: "Objects: empty arguments",
		d:    Dialect{Objects: true},
		req:  call("c", ``),
		lax: `{"Messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: tool call 0: arguments are not a JSON object",
	}, {
		name: "Objects: string arguments",
		d:    Dialect{Objects: true},
		req:  call("c", `"{\"a\":"`),
		lax: `{"Messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}],` +
			`"Tools":null,"ResponseFormat":null}`,
		wants: "error: recourse: : message 0: tool call 0: arguments are not a JSON object",
	}, {
		name:  "Objects: tool parameters",
		d:     Dialect{Objects: true},
		req:   &chat.Request{Tools: []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`true`)}}},
		lax:   `{"Messages":[],"Tools":[{"type":"function","function":{"name":"f","parameters":true}}],"ResponseFormat":null}`,
		wants: "error: recourse: : tool 0: parameters are not a JSON object",
	}, {
		name: "Objects: schema",
		d:    Dialect{Objects: true},
		req:  schema(`"s"`, false),
		lax: `{"Messages":[],"Tools":null,` +
			`"ResponseFormat":{"type":"json_schema","json_schema":{"name":"response","schema":"s"}}}`,
		wants: "error: recourse: : schema is not a JSON object",
	}, {
		name: "ExclusiveFormats",
		d:    Dialect{ExclusiveFormats: true},
		req:  schema(`{}`, true),
		lax: `{"Messages":[],"Tools":null,` +
			`"ResponseFormat":{"type":"json_schema","json_schema":{"name":"response","schema":{}}}}`,
		wants: "error: recourse: : Schema and JSONMode are mutually exclusive",
	}, {
		name: "StrictFalse",
		d:    Dialect{StrictFalse: true},
		req:  schema(`{}`, false),
		lax: `{"Messages":[],"Tools":null,` +
			`"ResponseFormat":{"type":"json_schema","json_schema":{"name":"response","schema":{}}}}`,
		wants: `{"Messages":[],"Tools":null,` +
			`"ResponseFormat":{"type":"json_schema","json_schema":{"name":"response","schema":{},"strict":false}}}`,
	}, {
		name:  "Provider names the provider",
		d:     Dialect{Provider: codec.OMLX},
		req:   &chat.Request{Tools: []chat.ToolSpec{{}}},
		lax:   "error: recourse: : tool 0: empty name",
		wants: "error: recourse: omlx: tool 0: empty name",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := encode(t, Dialect{}, tt.req); got != tt.lax {
				t.Errorf("zero Dialect:\n got %s\nwant %s", got, tt.lax)
			}
			if got := encode(t, tt.d, tt.req); got != tt.wants {
				t.Errorf("%+v:\n got %s\nwant %s", tt.d, got, tt.wants)
			}
		})
	}
}

// TestEncodeErrorsQuoteNoValues checks that no error text holds a value of
// the request; each request is rejected by at least one of the dialects.
func TestEncodeErrorsQuoteNoValues(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	strict := Dialect{Provider: codec.OpenAI, KnownRoles: true, AssistantToolCalls: true, ToolCallIDs: true, ExclusiveFormats: true}
	objects := Dialect{Provider: codec.OMLX, CheckImages: true, Objects: true}
	for _, req := range []*chat.Request{
		{Messages: []chat.Message{{Role: secret}}},
		{Messages: []chat.Message{{Role: chat.System, Content: secret, Images: []chat.Image{{Data: []byte(secret)}}}}},
		{Messages: []chat.Message{{Role: chat.User, Images: []chat.Image{{MIMEType: secret, Data: []byte{1}}}}}},
		{Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: secret, Name: secret, Arguments: json.RawMessage(`{"` + secret)}}}}},
		{Tools: []chat.ToolSpec{{Name: secret, Parameters: json.RawMessage(`"` + secret)}}},
		{Schema: &chat.Schema{Name: secret, Schema: json.RawMessage(secret)}},
	} {
		failed := false
		for _, d := range []Dialect{strict, objects} {
			if _, err := d.Encode(req); err != nil {
				failed = true
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q quotes a value", err)
				}
			}
		}
		if !failed {
			t.Errorf("Encode(%+v) succeeded in both dialects", req)
		}
	}
}

func TestFinite(t *testing.T) {
	t.Parallel()
	d := Dialect{Provider: codec.OpenAI}
	for _, tt := range []struct {
		o    chat.Options
		want string
	}{
		{chat.Options{}, ""},
		{chat.Options{Temperature: new(0.0), TopP: new(1.0)}, ""},
		{chat.Options{Temperature: new(math.NaN())}, "recourse: openai: Temperature is not a finite number"},
		{chat.Options{Temperature: new(math.Inf(1)), TopP: new(math.NaN())}, "recourse: openai: Temperature is not a finite number"},
		{chat.Options{TopP: new(math.Inf(-1))}, "recourse: openai: TopP is not a finite number"},
	} {
		got := ""
		if err := d.Finite(&tt.o); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Finite(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

func TestMarshalKeepsHTMLAndCompactsRawJSON(t *testing.T) {
	t.Parallel()
	got, err := Marshal(Tool{Type: "function", Function: Function{
		Name: "<f>", Description: "a & b", Parameters: json.RawMessage("{ \"x\" :\n[1, 2] }"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"function","function":{"name":"<f>","description":"a & b","parameters":{"x":[1,2]}}}`
	if string(got) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, want)
	}
}
