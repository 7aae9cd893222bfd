package sender_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/layers/sender"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New sends exactly one POST per round trip; it never resends by itself.
func ExampleNew() {
	srv := recoursetest.NewServer(recoursetest.JSON(421, `{}`))
	defer srv.Close()
	client := &http.Client{Transport: sender.New(nil)}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, srv.Count())
	// Output:
	// 421 1
}
