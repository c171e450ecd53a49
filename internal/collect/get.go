package collect

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Get reads url with c and parses the answer; a status other than 200 OK is
// an error.
func Get[T any](ctx context.Context, c *http.Client, url string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return zero, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return zero, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return zero, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parse(resp.Body)
}
