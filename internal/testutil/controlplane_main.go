package testutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunWithControlPlane is the body of a TestMain whose tests talk to a real
// API server: it starts the control plane, points *c at it, runs the tests
// and stops it, so every such package starts and reports it the same way.
// It returns the exit code for os.Exit.
func RunWithControlPlane(m *testing.M, c *client.Client) int {
	cp, err := StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	}()
	*c, err = client.New(cp.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a client:", err)
		return 1
	}
	return m.Run()
}

// NewNamespace creates a namespace named prefix plus a random suffix, so the
// cases of a test package run in parallel and may reuse object names.
func NewNamespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// CreateStrict creates obj in namespace ns as kubectl does, with strict field
// validation so that a misspelled field is an error rather than dropped, and
// returns the API server's error; obj is then the object as stored.
func CreateStrict(c client.Client, ns string, obj *unstructured.Unstructured) error {
	obj.SetNamespace(ns)
	return c.Create(context.Background(), obj, client.FieldValidation(metav1.FieldValidationStrict))
}

// Dedent removes the indentation common to the non-blank lines of a YAML
// manifest written inside a Go raw string (Go's tabs), so the YAML's own
// spaces stay; blank lines become empty.
func Dedent(manifest string) string {
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
	return strings.Join(lines, "\n")
}
