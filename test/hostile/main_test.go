package hostile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestMain(m *testing.M) { os.Exit(runWithControlPlane(m)) }

func runWithControlPlane(m *testing.M) int {
	cp, err := testutil.StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	}()
	k8s, err = client.New(cp.Config, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a client:", err)
		return 1
	}
	return m.Run()
}

// newNamespace creates a namespace for one case, so cases run in parallel
// and may reuse names.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hostile-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
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
	lines := strings.Split(manifest, "\n")
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		for !strings.HasPrefix(indent, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
			continue
		}
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	// As kubectl does: YAML to JSON, then Kubernetes' own JSON decoding, which
	// keeps integers as int64 (encoding/json would make them float64).
	doc, err := yaml.YAMLToJSON([]byte(strings.Join(lines, "\n")))
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

// apply creates the manifest in namespace ns the way kubectl does (with strict
// field validation, so misspelled fields are errors) and returns the object as
// stored, or the API server's error.
func apply(t *testing.T, ns, manifest string) (*unstructured.Unstructured, error) {
	t.Helper()
	obj := decode(t, manifest)
	obj.SetNamespace(ns)
	err := k8s.Create(context.Background(), obj, client.FieldValidation(metav1.FieldValidationStrict))
	return obj, err
}

func excerpt(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "\n..."
	}
	return s
}
