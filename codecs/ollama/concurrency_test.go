package ollama_test

import (
	"sync"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

// TestCodecIsSafeForConcurrentUse shares one Codec between goroutines; run
// it with -race.
func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	req := &chat.Request{Model: "m", Messages: []chat.Message{user("hi")}, Options: chat.Options{TopK: ptr(3)}}
	want, err := c.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := c.Encode(req)
				if err != nil || string(got) != string(want) {
					t.Errorf("Encode = %s, %v", got, err)
					return
				}
				if _, err := c.Decode([]byte(okBody)); err != nil {
					t.Errorf("Decode: %v", err)
					return
				}
				info, _ := c.Describe(want)
				o := c.NewObserver(info)
				o.Write([]byte(okBody))
				_ = o.Observed()
				if err := c.Capabilities().Validate(); err != nil {
					t.Errorf("Capabilities: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
