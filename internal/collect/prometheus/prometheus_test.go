package prometheus

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// vectorOf is the body of a successful instant query with one sample per "namespace/pod".
func vectorOf(samples ...string) string {
	body := `{"status":"success","data":{"resultType":"vector","result":[`
	for i := 0; i+1 < len(samples); i += 2 {
		if i > 0 {
			body += ","
		}
		ns, pod, _ := strings.Cut(samples[i], "/")
		body += fmt.Sprintf(`{"metric":{"namespace":%q,"pod":%q},"value":[1700000000,%q]}`, ns, pod, samples[i+1])
	}
	return body + `]}}`
}

// answering is a Prometheus that answers every query with status and body.
func answering(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func apiOf(t *testing.T, h http.Handler) promv1.API {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := promapi.NewClient(promapi.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(c)
}

func TestTheReaderKeepsKnownSamplesAndCallsAnUnknownAnswerAnError(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "shop", Name: "web-a"}, types.NamespacedName{Namespace: "blog", Name: "web-b"}
	for _, tt := range []struct {
		name    string
		handler http.Handler
		want    map[types.NamespacedName]float64
		wantErr bool
	}{
		{"a vector: one value per namespace and pod", answering(http.StatusOK, vectorOf("shop/web-a", "0.5", "blog/web-b", "2")),
			map[types.NamespacedName]float64{a: 0.5, b: 2}, false},
		{"NaN, infinite and negative samples are unknown and left out",
			answering(http.StatusOK, vectorOf("shop/web-a", "0.5", "blog/web-b", "NaN", "shop/c", "+Inf", "shop/d", "-1")),
			map[types.NamespacedName]float64{a: 0.5}, false},
		{"an empty vector is an error, never zero", answering(http.StatusOK, vectorOf()), nil, true},
		{"a matrix is not the vector asked for",
			answering(http.StatusOK, `{"status":"success","data":{"resultType":"matrix","result":[]}}`), nil, true},
		{"a query Prometheus failed to run", answering(http.StatusUnprocessableEntity, `{"status":"error","errorType":"execution","error":"query timed out"}`), nil, true},
		{"a server error", answering(http.StatusInternalServerError, "upstream down"), nil, true},
		{"a malformed body", answering(http.StatusOK, `{"status":"success","data":`), nil, true},
		{"a Prometheus that does not answer in time",
			http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm() // a request's context ends with its connection only once its body was read
				<-r.Context().Done()
			}), nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			got, err := ByPod(ctx, apiOf(t, tt.handler), "up")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tt.wantErr)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestByPodNameKeysOneNamespacesSamplesByPod(t *testing.T) {
	got, err := ByPodName(context.Background(), apiOf(t, answering(http.StatusOK, vectorOf("shop/web-a", "3", "shop/web-b", "NaN"))), "up")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"web-a": 3}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestTheNamespaceRegexNamesEachPoolsNamespaceOnceInOrder(t *testing.T) {
	pool := func(ns string) v1.AppPool { return v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}} }
	for _, tt := range []struct {
		name  string
		pools []v1.AppPool
		want  string
	}{
		{"one pool", []v1.AppPool{pool("shop")}, "shop"},
		{"pools of one namespace name it once", []v1.AppPool{pool("shop"), pool("shop")}, "shop"},
		{"namespaces in the order of the pools", []v1.AppPool{pool("shop"), pool("blog"), pool("shop")}, "shop|blog"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NamespaceRegex(tt.pools); got != tt.want {
				t.Errorf("NamespaceRegex = %q, want %q", got, tt.want)
			}
		})
	}
}
