package redirectguard_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/recourse-dev/recourse/internal/stage/redirectguard"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/sender"
	"github.com/recourse-dev/recourse/recoursetest"
)

// New refuses redirects: even inside an http.Client with its default
// redirect policy, the Location is never contacted.
func ExampleNew() {
	target := recoursetest.NewTarget()
	defer target.Close()
	srv := recoursetest.NewServer(recoursetest.Redirect(307, target.URL))
	defer srv.Close()
	rt := redirectguard.New().Wrap(sender.New(nil))
	_, err := (&http.Client{Transport: rt}).Post(srv.URL, "application/json", nil)
	var refused *layer.RedirectError
	fmt.Println(errors.As(err, &refused), refused.StatusCode(), target.Hits())
	// Output:
	// true 307 0
}
