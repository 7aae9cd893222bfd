package otlpjson

import (
	"context"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// sdktraceSpans returns one ended span with attributes of every kind.
func sdktraceSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("test").Start(context.Background(), "op")
	span.SetAttributes(attribute.Bool("b", true), attribute.Int("i", 7), attribute.Float64("f", 1.5),
		attribute.String("s", "x"), attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1}),
		attribute.BoolSlice("bs", []bool{false}), attribute.Float64Slice("fs", []float64{2.5}))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.Ended()
}

func TestEncodeValues(t *testing.T) {
	req := Encode(sdktraceSpans(t))
	s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	want := map[string]string{"b": "true", "i": "7", "f": "1.5", "s": "x", "ss": "a,b", "is": "1", "bs": "false", "fs": "2.5"}
	for _, kv := range s.Attributes {
		if got := flat(kv.Value); got != want[kv.Key] {
			t.Errorf("%s: %q, want %q", kv.Key, got, want[kv.Key])
		}
	}
	if len(s.Attributes) != len(want) {
		t.Errorf("%d attributes, want %d", len(s.Attributes), len(want))
	}
	if s.Kind != 1 || s.Status.Code != 0 {
		t.Errorf("kind %d status %d, want internal (1) and unset (0)", s.Kind, s.Status.Code)
	}
}

func flat(v AnyValue) string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		return *v.IntValue
	case v.BoolValue != nil:
		if *v.BoolValue {
			return "true"
		}
		return "false"
	case v.DoubleValue != nil:
		return strconvF(*v.DoubleValue)
	case v.ArrayValue != nil:
		out := ""
		for i, e := range v.ArrayValue.Values {
			if i > 0 {
				out += ","
			}
			out += flat(e)
		}
		return out
	}
	return ""
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
