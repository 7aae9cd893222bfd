package chain_test

import (
	"iter"

	"github.com/recourse-dev/recourse/chat"
)

func iterPull(seq iter.Seq2[chat.Chunk, error]) (func() (chat.Chunk, error, bool), func()) {
	return iter.Pull2(seq)
}
