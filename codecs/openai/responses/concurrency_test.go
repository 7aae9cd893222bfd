package responses_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

// One Codec serves many goroutines at once (run under -race).
func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	c := responses.New()
	body := []byte(unary("completed", []any{msgItem(outputText("hi"))}, nil))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				enc, err := c.Encode(richRequest())
				assert.NoError(t, err)
				_, err = c.Describe(enc)
				assert.NoError(t, err)
				comp, err := c.Decode(body)
				assert.NoError(t, err)
				assert.Equal(t, "hi", comp.Message.Content)
				assert.NotNil(t, c.NewObserver(codec.RequestInfo{Operation: codec.Streaming}))
				assert.NoError(t, c.Capabilities().Validate())
			}
		}()
	}
	wg.Wait()
}
