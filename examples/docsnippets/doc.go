// Package docsnippets holds the test that compiles every Go snippet of the
// repository's documentation: each ```go block of README.md, CONTRIBUTING.md
// and docs/*.md is a whole Go file, and the test builds and vets them all in
// a scratch module that requires what this module requires, after checking
// that each is gofmt-formatted.
//
// The blank imports below keep redisstore and go-redis, which only the
// snippets import, in this module's go.mod and go.sum.
package docsnippets

import (
	_ "github.com/recourse-dev/recourse/redisstore"
	_ "github.com/redis/go-redis/v9"
)
