package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SiteContentSpec is what a Gateway API route serves of its AppPools'
// static content: the content of an inline route (RouteContent), for a
// route that a tenant owns in a namespace of its own.
//
// A tenant serves its own files alone: the directory is resolved under a
// folder of the pool's content named after the route's namespace
// ("directory: shop" in namespace tenant-a serves <root>/tenant-a/shop), so
// a hosting provider lays out each tenant's sites in the tenant's folder.
// Routes of the Gateway's own namespace (the provider's, as the pools are)
// resolve from the content root, as the farm's inline sites do.
type SiteContentSpec struct {
	// directory of the route's folder of the pool's content that the route
	// serves as its root ("shop": /logo.svg is <namespace>/shop/logo.svg).
	// Unset: the namespace's folder itself. The schema's pattern refuses
	// what could lead elsewhere; these rules say why in words.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="directory is relative to the route's folder of the pool's content: no leading '/'"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '.' || s == '..')",message="directory may not name '.' or '..': a site stays inside its folder"
	// +kubebuilder:validation:XValidation:rule="!self.contains('%') && !self.contains('\\\\')",message="directory is plain names: no percent-encoding and no backslash"
	Directory ContentDirectory `json:"directory,omitempty"`

	// defaultDocuments are the files a folder's URL serves, the first that
	// exists, at most 8. Unset: the pool's (content.defaultDocuments).
	//
	// +optional
	DefaultDocuments DefaultDocuments `json:"defaultDocuments,omitempty"`

	// errorPages answer errors of the pool's workers with files of the
	// site's directory (IIS custom errors), one per status code. They
	// replace the workers' own answers (a missing file, a folder without a
	// default document, a method a file does not take, an app that cannot
	// be reached or timed out), not the answers of a pool's app.
	//
	// +optional
	// +listType=map
	// +listMapKey=statusCode
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	ErrorPages []ErrorPage `json:"errorPages,omitempty"`
}

// SiteContent is a site's share of an AppPool's content for Gateway API:
// an HTTPRoute rule names it in an ExtensionRef filter (group webfarm.dev,
// kind SiteContent) of its own namespace, beside its AppPool backendRefs.
// Many tenants' sites thus share one pool's workers, each with its own
// files; a change of a site changes only the frontend's routes.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=sc,categories=web
// +kubebuilder:printcolumn:name="Directory",type=string,JSONPath=`.spec.directory`
// +kubebuilder:printcolumn:name="Documents",type=string,JSONPath=`.spec.defaultDocuments`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SiteContent struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's name, namespace, labels and annotations.
	//
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the site's content.
	//
	// +optional
	// +default={}
	Spec SiteContentSpec `json:"spec,omitzero"`
}

// SiteContentList is a list of SiteContents.
//
// +kubebuilder:object:root=true
type SiteContentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SiteContent `json:"items"`
}

func init() { SchemeBuilder.Register(&SiteContent{}, &SiteContentList{}) }
