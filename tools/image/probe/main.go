// Command recourse-probe is the image's health check: it sends GET to the
// URL it is given (default http://127.0.0.1:8787/readyz) and exits 0 when
// the answer is 200 within two seconds, 1 otherwise. The proxy's image has
// no shell and no curl, so a container runtime's health check runs this.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	url := "http://127.0.0.1:8787/readyz"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recourse-probe:", err)
		os.Exit(1)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recourse-probe:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "recourse-probe:", url, "answered", resp.Status)
		os.Exit(1)
	}
}
