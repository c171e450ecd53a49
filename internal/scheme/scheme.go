// Package scheme builds the runtime.Scheme the operator and its tests use.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// New returns a scheme with the built-in kinds and the webfarm.dev kinds.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // a programming error: the scheme builders of compiled-in types
	}
	if err := v1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
