package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// Sample is one element of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates a PromQL expression at the current time on the suite's
// Prometheus and returns the vector it yields (an error for other result
// types or a failed query).
func (c *Cluster) Query(expr string) ([]Sample, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(c.PrometheusURL + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", expr, resp.Status, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, answer.Error)
	}
	if answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result is a %s, not a vector", expr, answer.Data.ResultType)
	}
	samples := make([]Sample, 0, len(answer.Data.Result))
	for _, r := range answer.Data.Result {
		text, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %q: %w", expr, text, err)
		}
		samples = append(samples, Sample{Labels: r.Metric, Value: v})
	}
	return samples, nil
}

// EventuallyQuery polls a PromQL expression until check accepts its result.
func (c *Cluster) EventuallyQuery(t testing.TB, timeout time.Duration, expr string, check func([]Sample) error) []Sample {
	t.Helper()
	var last []Sample
	Eventually(t, timeout, func() error {
		samples, err := c.Query(expr)
		if err != nil {
			return err
		}
		last = samples
		return check(samples)
	})
	return last
}
