package hostile_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
)

// These tests apply hostile and invalid manifests, as a person (or an
// attacker with write access to the custom resources) would with kubectl,
// to a real kube-apiserver and etcd with the generated CRDs. What the API
// server admits is then resolved and rendered exactly as the controllers do,
// and the output is checked with the real nginx and Envoy.

// k8s is a client of the test control plane that TestMain starts.
var k8s client.Client

// platform is what the operator's flags would give the controllers.
var platform = model.Platform{
	Images: model.Images{
		Envoy:      "docker.io/envoyproxy/envoy:v1.40.0",
		Nginx:      "docker.io/library/nginx:1.29",
		CacheAgent: "ghcr.io/webfarm/operator:dev",
		PullPolicy: "IfNotPresent",
	},
	XDSHost:           "webfarm-operator-xds.webfarm-system.svc",
	XDSPort:           18000,
	ActivatorPort:     18081,
	ActivationTimeout: time.Minute,
}

func TestMain(m *testing.M) { os.Exit(testutil.RunWithControlPlane(m, &k8s)) }

// newNamespace creates a namespace for one case, so cases run in parallel
// and may reuse names.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testutil.NewNamespace(t, k8s, "hostile-")
}

// q writes a string as a YAML double-quoted scalar (a JSON string is one), so
// control characters, quotes and backslashes reach the API server as written.
func q(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// decode reads a YAML manifest written inside a Go raw string: the indentation
// common to its lines (Go's tabs) is removed first, so the YAML's own spaces stay.
func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	// As kubectl does: YAML to JSON, then Kubernetes' own JSON decoding, which
	// keeps integers as int64 (encoding/json would make them float64).
	doc, err := yaml.YAMLToJSON([]byte(testutil.Dedent(manifest)))
	if err != nil {
		t.Fatalf("the test manifest is not valid YAML: %v\n%s", err, excerpt(manifest))
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(doc); err != nil {
		t.Fatalf("the test manifest is not an object: %v\n%s", err, excerpt(manifest))
	}
	if obj.GetKind() == "" || obj.GetName() == "" {
		t.Fatalf("the test manifest needs a kind and a metadata.name:\n%s", excerpt(manifest))
	}
	return obj
}

// admitted applies the manifest in namespace ns and reports whether the
// API server took it. With refused set, it must refuse it with an error
// that holds each of refused; otherwise it must take it. what names the
// object in the messages.
func admitted(t *testing.T, ns, manifest, what string, refused []string) bool {
	t.Helper()
	_, err := apply(t, ns, manifest)
	if refused != nil {
		if err == nil {
			t.Fatalf("the API server admitted the %s; want an error containing %q", what, refused)
		}
		for _, w := range refused {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the refusal does not contain %q: %v", w, err)
			}
		}
		return false
	}
	if err != nil {
		t.Fatalf("the API server refused the %s: %v", what, err)
	}
	return true
}

// apply creates the manifest in namespace ns (testutil.CreateStrict) and
// returns the object as stored, or the API server's error.
func apply(t *testing.T, ns, manifest string) (*unstructured.Unstructured, error) {
	t.Helper()
	obj := decode(t, manifest)
	return obj, testutil.CreateStrict(k8s, ns, obj)
}

func excerpt(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "\n..."
	}
	return s
}
