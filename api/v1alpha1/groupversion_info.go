// Package v1alpha1 holds the webfarm.dev/v1alpha1 API: WebFarm, AppPool and
// CachePolicy. Field defaults follow the IIS 6.0/7 values our users know
// (AppPoolQueueLength 1000, rapid-fail 5 in 5 minutes, idle timeout 20 minutes,
// frequentHitThreshold 2 in 10 s, ObjectCacheTTL 30 s, MaxCachedFileSize 256 KiB).
//
// +kubebuilder:object:generate=true
// +groupName=webfarm.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "webfarm.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
