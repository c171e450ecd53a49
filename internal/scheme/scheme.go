// Package scheme builds the runtime.Scheme the operator and its tests use.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// New returns a scheme with the built-in kinds, the webfarm.dev kinds and
// Gateway API's standard channel (GatewayClass, Gateway, HTTPRoute,
// GRPCRoute in v1; ReferenceGrant in v1beta1).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install,
	} {
		if err := add(s); err != nil {
			panic(err) // a programming error: the scheme builders of compiled-in types
		}
	}
	return s
}
