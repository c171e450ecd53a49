package testutil

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// PromStub is an HTTP server that answers the Prometheus query API
// (/api/v1/query) with what a test set, by the query's namespace and metric:
// the edge cases a real Prometheus gives only by accident (errors, empty
// answers, NaN). Tests of the autoscaler's behaviour against real metrics
// use a real Prometheus (the e2e suite).
type PromStub struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string]PromAnswer // by namespace + " " + metric
	queries int
}

// Queries is how many queries the stub was asked.
func (s *PromStub) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// PromAnswer is the stub's answer to a query: a vector of values by pod
// ("NaN" allowed), or an error Prometheus reports.
type PromAnswer struct {
	ByPod map[string]string
	Error string
	// Unreachable: the stub closes the connection without an answer, as
	// an address nothing answers at would.
	Unreachable bool
}

// NewPromStub starts a stub; it stops when the process's tests end.
func NewPromStub() *PromStub {
	s := &PromStub{answers: map[string]PromAnswer{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Set answers queries of metric (a substring of the query, such as
// "envoy_cluster_upstream_rq_total") about namespace.
func (s *PromStub) Set(namespace, metric string, a PromAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[namespace+" "+metric] = a
}

// queryNamespace finds the namespace a query is about, matched exactly or,
// as the collectors of several namespaces do, by a regex of one namespace.
var queryNamespace = regexp.MustCompile(`namespace=~?"([^"]+)"`)

func (s *PromStub) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	var ns string
	if m := queryNamespace.FindStringSubmatch(q); m != nil {
		ns = m[1]
	}
	s.mu.Lock()
	s.queries++
	var answer PromAnswer
	found := false
	for key, a := range s.answers {
		namespace, metric, _ := strings.Cut(key, " ")
		if namespace == ns && strings.Contains(q, metric) {
			answer, found = a, true
			break
		}
	}
	s.mu.Unlock()
	if answer.Unreachable {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if answer.Error != "" {
		// 422: how Prometheus reports a query that failed to run.
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "execution", "error": answer.Error})
		return
	}
	result := []any{}
	if found {
		for pod, v := range answer.ByPod {
			result = append(result, map[string]any{"metric": map[string]string{"namespace": ns, "pod": pod}, "value": []any{1.7e9, v}})
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
}
