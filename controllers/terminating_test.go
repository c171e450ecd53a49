package controllers

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestARefusalInATerminatingNamespaceIsNotRetried(t *testing.T) {
	// As the API server words it: a Forbidden with the NamespaceTerminating cause.
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `configmaps "web-pool" is forbidden: unable to create new content in namespace shop because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}},
	}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a child refused because its namespace is being deleted is not retried", terminating, true},
		{"the refusal wrapped by the applier and joined with a status error is still recognised",
			errors.Join(fmt.Errorf("applying ConfigMap shop/web-pool: %w", terminating), errors.New("writing status: conflict")), true},
		{"another refusal is retried", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web-pool", errors.New("quota")), false},
		{"no error is nothing to skip", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := namespaceTerminating(tt.err); got != tt.want {
				t.Errorf("namespaceTerminating(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
