package main

import (
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

func TestEnabledControllers(t *testing.T) {
	known := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name, wantErr string
		spec, want    []string
	}{
		{name: "a star runs every known controller", spec: []string{"*"}, want: known},
		{name: "a minus leaves one out of the star", spec: []string{"*", "-b"}, want: []string{"a", "c"}},
		{name: "names alone run those only", spec: []string{"c", "a"}, want: []string{"a", "c"}},
		{name: "an unknown controller is an error", spec: []string{"*", "-acme"}, wantErr: `unknown controller "acme"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := enabledControllers(tc.spec, known)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestRequestIdentity(t *testing.T) {
	t.Run("a new request records who asked for it", func(t *testing.T) {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"request": "x"}}}
		user := authenticationv1.UserInfo{Username: "alice", UID: "1", Groups: []string{"dev"},
			Extra: map[string]authenticationv1.ExtraValue{"scope": {"a"}}}
		if err := stampIdentity(obj, user); err != nil {
			t.Fatal(err)
		}
		spec := obj.Object["spec"].(map[string]any)
		if spec["username"] != "alice" || spec["uid"] != "1" || spec["request"] != "x" ||
			len(spec["groups"].([]any)) != 1 || len(spec["extra"].(map[string]any)["scope"].([]any)) != 1 {
			t.Fatalf("spec %v", spec)
		}
	})
	t.Run("a changed requester is refused and an unchanged one accepted", func(t *testing.T) {
		old := cmapi.CertificateRequestSpec{Username: "alice", Groups: []string{"dev"}}
		if err := identityUnchanged(old, old); err != nil {
			t.Fatal(err)
		}
		changed := old
		changed.Username = "mallory"
		if err := identityUnchanged(old, changed); err == nil {
			t.Fatal("a changed username was accepted")
		}
	})
}

func TestAdmissionScheme(t *testing.T) {
	t.Run("a v1 CertificateRequest converts to the internal version as itself", func(t *testing.T) {
		scheme := admissionScheme()
		cr := &cmapi.CertificateRequest{Spec: cmapi.CertificateRequestSpec{Username: "alice"}}
		cr.SetGroupVersionKind(cmapi.SchemeGroupVersion.WithKind(cmapi.CertificateRequestKind))
		out, err := scheme.UnsafeConvertToVersion(cr, runtime.InternalGroupVersioner)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := out.(*cmapi.CertificateRequest); !ok || got.Spec.Username != "alice" {
			t.Fatalf("converted to %T %+v", out, out)
		}
	})
}
