package retry_test

import (
	"iter"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

func iterPull(seq iter.Seq2[chat.Chunk, error]) (func() (chat.Chunk, error, bool), func()) {
	return iter.Pull2(seq)
}

func ollamaCodec() *ollama.Codec { return ollama.New() }
