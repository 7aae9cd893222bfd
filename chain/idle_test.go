package chain_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestChainCloseIdleConnectionsReachesTheSender(t *testing.T) {
	srv := recoursetest.NewServer(recoursetest.JSON(200, recoursetest.OpenAIChat("hi")))
	defer srv.Close()
	before := goleak.IgnoreCurrent()
	ch, err := chain.Default(openai.New())
	require.NoError(t, err)
	hc := &http.Client{Transport: ch}
	resp, err := hc.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	require.NoError(t, err)
	resp.Body.Close()
	hc.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}
